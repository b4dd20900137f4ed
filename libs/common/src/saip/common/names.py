"""The names every service agrees on: NATS key-value buckets, streams and subjects (publishers never use wildcards),
and who operates saip through which interface, as records and requests name them."""

from __future__ import annotations

# Key-value buckets, one per kind of control-plane record.
AUTH_BUCKET = "saip-auth"
MCP_TOKEN_KEY = "mcp-token"
APPROVALS_BUCKET = "saip-approvals"
# The credentials /mcp accepts besides the shared token (gateway.proto's CredentialRecord): named static tokens and
# dynamically registered OAuth clients here; OAuth grants and refresh tokens in the grants bucket (entries age out),
# pending authorizations and codes in the authorizations bucket (minutes), and each replica's count of their use.
CLIENTS_BUCKET = "saip-clients"
GRANTS_BUCKET = "saip-grants"
AUTHORIZATIONS_BUCKET = "saip-authorizations"
USAGE_BUCKET = "saip-usage"
# The 2026-07-28 questions out with a client, by nonce: what lets exactly one replica record an unanswered one.
QUESTIONS_BUCKET = "saip-questions"
# What each publishing service publishes lives in its bucket; gateways watch it and list the served tools again.
TOOLS_BUCKET = "saip-tools"
KNOWLEDGE_BUCKET = "saip-knowledge"
# The headless chat's conversations (saip_chat_ask), one key per conversation.
CHAT_BUCKET = "saip-chat"
# Upstream MCP servers (`server.<id>`) and the composition of their tools onto /mcp (`exposure`); the tools service
# serves the composition, so gateways watch this bucket and the ledger's too.
SERVERS_BUCKET = "saip-servers"
# The fingerprint ledger of upstream tool definitions (one key per serverId::toolName, encoded: see upstream.proto).
LEDGER_BUCKET = "saip-ledger"
# The shipyard's shipped servers (`server.<name>`) and their last runs (`run.<name>`).
SHIPYARD_BUCKET = "saip-shipyard"
# Console sessions signed out before they expired, by session id (the value: when the session would have ended).
SESSIONS_BUCKET = "saip-sessions"
# The originals of ingested documents (the knowledge service), one object per ingest.
DOCUMENTS_OBJECT_STORE = "saip-documents"
# The shipped servers' bundles (the shipyard service), one archive a version.
BUNDLES_OBJECT_STORE = "saip-bundles"

# How saip's gateway names itself in the MCP handshake: an upstream that answers so is saip's own /mcp, refused.
GATEWAY_MCP_NAME = "saip"
GATEWAY_MCP_TITLE = "saip gateway"

# The audit trail: one stream; publishers use the record subjects, the collector appends the chain.
AUDIT_STREAM = "SAIP_AUDIT"
AUDIT_SUBJECTS = "saip.audit.>"
AUDIT_MANAGEMENT = "saip.audit.management"
AUDIT_TOOL = "saip.audit.tool"
AUDIT_RISK = "saip.audit.risk"
AUDIT_LEDGER = "saip.audit.ledger"
AUDIT_RECORD_SUBJECTS = (AUDIT_MANAGEMENT, AUDIT_TOOL, AUDIT_RISK)
AUDIT_COLLECTOR = "audit-collector"

# The services' JSON log lines (saip.common.telemetry): core publishes on saip.logs.<service>, kept bounded by the
# SAIP_LOGS stream for saip_monitor_logs_tail; and each process's heartbeat, one key a process.
LOGS_STREAM = "SAIP_LOGS"
LOGS_SUBJECTS = "saip.logs.>"
LOGS_PREFIX = "saip.logs."
SYSTEM_BUCKET = "saip-system"
# Finished spans (saip.common.tracing): core publishes of OTLP batches on saip.traces.<service>, which every audit
# replica keeps (bounded) for saip_monitor_traces.
TRACES_SUBJECTS = "saip.traces.>"
TRACES_PREFIX = "saip.traces."

# A proxied call parked at an upstream's question lives on one tools replica: a resume that reaches another is
# forwarded on core NATS to saip.tools.parked.<holder>, and the call's events come back on the inbox the header names.
PARKED_PREFIX = "saip.tools.parked."
PARKED_EVENTS_HEADER = "Saip-Events-To"

# Each upstream connection's state change (connecting, connected, failed, disabled), told by the tools replica whose
# connection it is (core NATS, saip.v1.ConnectionChanged): the consoles' live feed follows it.
CONNECTION_CHANGED = "saip.tools.connection.changed"

# The JetStream header that makes a publish idempotent (a retried record is stored once).
MSG_ID = "Nats-Msg-Id"

# Who operates saip, and through which interface (`Caller.operator`, `Caller.interface`): the AI through /mcp, the
# person through the REST API, the command line or the console. A record from before the trail carried them is the
# AI's through /mcp.
AI, PERSON = "ai", "person"
MCP, REST, CLI, CONSOLE = "mcp", "rest", "cli", "console"
OPERATORS = (AI, PERSON)
INTERFACES = (MCP, REST, CLI, CONSOLE)
# The header the command line sends with every REST request (`Saip-Interface: cli`), so the gateway records the
# person's changes and answers through it as the command line's.
INTERFACE_HEADER = "Saip-Interface"
