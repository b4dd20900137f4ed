"""saip.sandbox._engine, built from engine.c, budget.c and bridge.c by `make install`: QuickJS-ng, as little of it as
the sandbox needs."""

VERSION: str

class ScriptError(Exception):
    """An exception the JavaScript did not catch, as its text."""

class Runtime:
    """One QuickJS runtime: its memory budget and its deadline."""

    used: int
    refused: bool
    interrupted: bool

    def __init__(self, stack_size: int = 0) -> None: ...
    def limit(self, memory: int, deadline: float, /) -> None: ...
    def compile(self, source: str, name: str, /) -> bytes: ...
    def context(self, bytecode: bytes, later: bytes, pool: bytes, /) -> Context: ...
    def collect(self) -> None: ...

class Context:
    """A realm of a Runtime, made from a script's bytecode; its entry takes and returns strings."""

    def call(self, *arguments: str) -> str: ...
    def take(self) -> list[str]: ...
    def close(self) -> None: ...
