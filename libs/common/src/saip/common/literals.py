"""Literal secrets, refused wherever a value may be a secret: a tool's static variables and code, a URL to fetch (its
userinfo password and its query parameters), a header, a key of `saip.yaml`. One rule, one sentence, everywhere
(the seed: "A static variable, header or URL parameter that looks like a secret must be a ${NAME} reference").

A value looks like a secret when its name says so (key, token, secret, password, authorization, credential,
cookie) and it is not only references (`${NAME}`, `Bearer ${NAME}`), or when the value itself has a secret's shape
whatever it is called (provider key formats, JWTs, private keys, `Bearer <literal>`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from saip.common.masking import is_secret_name

REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

# Literal values that are secrets whatever they are called: provider key formats, JWTs, private keys.
SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|\b(?:Bearer|Basic)\s+(?!\$\{)[A-Za-z0-9._~+/=-]{8,})"
)
# Where the person puts what a tool or a knowledge URL needs, as a refusal names it.
TOOLS_SOURCE = "the tools secrets file (tools.secrets), with the hosts it may be sent to,"
KNOWLEDGE_SOURCE = "the knowledge secrets file (knowledge.secrets), with the hosts it may be sent to,"
# Query parameters that carry credentials in URLs although their names do not say key or token.
URL_CREDENTIALS = frozenset(
    {"sig", "signature", "x-amz-signature", "x-amz-credential", "auth", "pwd", "pass", "session", "sessionid", "sid"}
)


def is_literal(name: str, value: str) -> bool:
    """Whether `value`, given under `name`, is a secret written out instead of referenced."""
    if SECRET_VALUE.search(value):
        return True
    rest = REFERENCE.sub("", value)
    return is_secret_name(name) and bool(rest.strip()) and not _scheme_only(rest)


def _scheme_only(literal: str) -> bool:
    """`Bearer ${TOKEN}` keeps a scheme word around the reference; only such framing may stay literal."""
    return bool(re.fullmatch(r"\s*(Bearer|Basic|Token|token)?\s*", literal))


def first_literal(values: Mapping[str, str]) -> str | None:
    """The name of the first value that is a literal secret."""
    return next((name for name, value in values.items() if is_literal(name, value)), None)


def url_literal(url: str) -> tuple[str, str] | None:
    """Where a URL holds a secret written out (its userinfo password, a query parameter), and a name for it."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.password and REFERENCE.sub("", parts.password):
        return "The password in the URL", "URL_PASSWORD"
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        credential = name.lower() in URL_CREDENTIALS and bool(REFERENCE.sub("", value).strip())
        if credential or is_literal(name, value):
            return f"The URL parameter '{name}'", suggestion(name)
    if SECRET_VALUE.search(url):
        return "A value in the URL", "URL_SECRET"
    return None


def suggestion(name: str) -> str:
    """A name for a secret: the name in upper snake case (`weatherApiKey` -> WEATHER_API_KEY)."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^A-Za-z0-9]+", "_", snake).strip("_").upper() or "SECRET"


def refusal(where: str, name: str, source: str, use: str) -> str:
    """The sentence every refusal of a literal secret says: what looks like one, where the person puts it instead,
    and how to reference it."""
    return (
        f"{where} looks like a secret, and secrets never pass through this interface: a literal value is refused. "
        f"Ask the person to add it to {source} as {name}, then use '${{{name}}}' {use} instead."
    )


def spec_refusal(static_variables: Mapping[str, object], code: object) -> str | None:
    """The refusal of a tool spec that holds a literal secret (in a static variable or its code), or None."""
    texts = {name: value for name, value in static_variables.items() if isinstance(value, str)}
    name = first_literal(texts)
    if name is not None:
        return refusal(f"Static variable '{name}'", suggestion(name), TOOLS_SOURCE, "as the value of a static variable")
    if isinstance(code, str) and SECRET_VALUE.search(code):
        return refusal("A value written in the code", "API_TOKEN", TOOLS_SOURCE, "as the value of a static variable")
    return None


def url_refusal(url: str, source: str) -> str | None:
    """The refusal of a URL that holds a literal secret, or None."""
    found = url_literal(url)
    if found is None:
        return None
    where, name = found
    return refusal(where, name, source, "in the URL")
