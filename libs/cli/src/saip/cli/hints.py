"""The hints of a message for the person: the gateway writes one message for both the AI (on /mcp) and the person
(the REST API), and its hints name the management tool to call next ("Run it with saip_shipyard_run."). The command
line prints each such name as the command that does the same (`saip shipyard run`); a tool with no command of its own
keeps its name, and so does one in quotes, which a message names as what a call was ("Tool 'saip_tools_publish' was
not run"). The commands about the AI's own calls (approvals, the audit trail) print their messages as they are, and
`--json` prints the REST API's answer as it is."""

from __future__ import annotations

import re

# Each management tool and the command that calls the same method (its options where the tool is one use of it).
COMMANDS = {
    "saip_monitor_overview": "saip status",
    "saip_monitor_management_log": "saip audit log",
    "saip_monitor_tool_calls": "saip audit calls",
    "saip_monitor_risk_events": "saip audit risks",
    "saip_monitor_hitl": "saip audit hitl",
    "saip_monitor_system": "saip audit system",
    "saip_monitor_logs_tail": "saip audit logs",
    "saip_monitor_traces": "saip traces list",
    "saip_monitor_trace_get": "saip traces get",
    "saip_monitor_mcp_status": "saip servers list",
    "saip_tools_list": "saip tools list",
    "saip_tools_get": "saip tools get",
    "saip_tools_check_risk": "saip tools risk",
    "saip_tools_get_exposure": "saip tools exposure",
    "saip_tools_save_draft": "saip tools save",
    "saip_tools_test": "saip tools test",
    "saip_tools_publish": "saip tools publish",
    "saip_tools_delete": "saip tools delete",
    "saip_tools_set_exposure": "saip tools exposure",
    "saip_mcp_list_servers": "saip servers list",
    "saip_mcp_catalog_search": "saip servers catalog",
    "saip_mcp_server_tools": "saip servers tools",
    "saip_mcp_add_from_catalog": "saip servers add --catalog",
    "saip_mcp_add_custom": "saip servers add",
    "saip_mcp_remove_server": "saip servers remove",
    "saip_mcp_reconnect": "saip servers reconnect",
    "saip_expose_get": "saip expose list",
    "saip_expose_preview": "saip expose apply --dry-run",
    "saip_expose_add_tools": "saip expose apply --add",
    "saip_expose_remove_tools": "saip expose apply --remove",
    "saip_expose_apply": "saip expose apply",
    "saip_knowledge_status": "saip knowledge status",
    "saip_knowledge_list_documents": "saip knowledge documents",
    "saip_knowledge_list_pipelines": "saip knowledge pipelines",
    "saip_knowledge_search": "saip knowledge search",
    "saip_knowledge_suggest_tools": "saip knowledge suggest",
    "saip_knowledge_ingest_document": "saip knowledge ingest",
    "saip_knowledge_apply_pipeline": "saip knowledge apply-pipeline",
    "saip_knowledge_delete_document": "saip knowledge delete",
    "saip_knowledge_delete_pipeline": "saip knowledge delete-pipeline",
    "saip_knowledge_publish_tool": "saip knowledge publish",
    "saip_knowledge_unpublish_tool": "saip knowledge unpublish",
    "saip_shipyard_list_servers": "saip shipyard servers",
    "saip_shipyard_list_shippable": "saip shipyard shippable",
    "saip_shipyard_validate": "saip shipyard validate",
    "saip_shipyard_status": "saip shipyard status",
    "saip_shipyard_logs": "saip shipyard logs",
    "saip_shipyard_targets": "saip shipyard targets",
    "saip_shipyard_ship": "saip shipyard ship",
    "saip_shipyard_run": "saip shipyard run",
    "saip_shipyard_stop": "saip shipyard stop",
    "saip_shipyard_delete": "saip shipyard delete",
    "saip_chat_ask": "saip chat ask",
    "saip_chat_list_conversations": "saip chat conversations",
}

_TOOL_NAME = re.compile(r"(?<!['\"])`?\b(saip_[a-z]+(?:_[a-z]+)+)\b`?(?!['\"])")


def for_person(text: str) -> str:
    """`text` with each management tool it names as the command that does the same, in backticks."""
    return _TOOL_NAME.sub(lambda m: f"`{COMMANDS[m[1]]}`" if m[1] in COMMANDS else m[0], text)
