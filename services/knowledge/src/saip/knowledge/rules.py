"""The knowledge rules composed over one set of ports: the documents (`knowledge`), the pipelines, search, the
knowledge tools (`published`) and the declared configuration (`declared`), each a module of its own."""

from __future__ import annotations

from dataclasses import dataclass

from saip.knowledge.declared import Declared
from saip.knowledge.knowledge import Knowledge
from saip.knowledge.pipelines import Pipelines
from saip.knowledge.published import KnowledgeTools
from saip.knowledge.search import Search


@dataclass(frozen=True)
class Rules:
    knowledge: Knowledge
    pipelines: Pipelines
    search: Search
    tools: KnowledgeTools
    declared: Declared

    @classmethod
    def over(cls, knowledge: Knowledge) -> Rules:
        pipelines = Pipelines(knowledge)
        search = Search(knowledge, pipelines)
        tools = KnowledgeTools(pipelines, search, knowledge.index)
        return cls(knowledge, pipelines, search, tools, Declared(knowledge, pipelines))
