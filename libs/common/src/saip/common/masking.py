"""Secret masking for everything that leaves a service: audit records, log lines, messages to the AI.

Authorization values, tokens, keys and passwords become `***`; `Bearer <token>` becomes `Bearer ***`; in URLs the
password of the userinfo (`https://ann:***@host/`) and the values of query parameters that carry credentials
(`?sig=***`, `&code=***`, as well as every secret-looking name) are masked; `${ENV}` references stay as they are
(they name a secret, they are not one); the values of resolved references, when the caller knows them, are replaced
wherever they appear.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

MASK = "***"
MIN_SECRET_LENGTH = 4

# Names whose values are secrets: authorization, token(s), secret(s), password, passwd, api key, private key,
# credential(s), cookie, and any name ending in "key" (x-api-key, client_key, ...).
_SECRET_NAME = r"(?:[\w-]*?(?:authorization|token|secret|passw(?:or)?d|credential|cookie)[\w-]*|[\w-]*key)"
SECRET_NAME = re.compile(rf"^{_SECRET_NAME}$", re.IGNORECASE)
ENV_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")

_BEARER = re.compile(r"\b(Bearer|Basic)\s+(?!\*\*\*)(?!\$\{)([A-Za-z0-9._~+/=-]+)", re.IGNORECASE)


class _Words:
    """Whether a text holds one of some words, in any case: what a pattern cannot match without, found far faster
    than the pattern's own failing scan (or a search for the words with IGNORECASE, slower still)."""

    def __init__(self, *words: str) -> None:
        self._words = words
        self._pattern = re.compile("|".join(words), re.IGNORECASE)

    def in_(self, text: str) -> bool:
        if not text.isascii():
            # IGNORECASE matches a few letters lower() does not give (ſ for s, ı and İ for i): the pattern decides.
            return self._pattern.search(text) is not None
        lowered = text.lower()
        return any(word in lowered for word in self._words)


# What _BEARER, and the pairs (a secret's name, _SECRET_NAME), cannot match without.
_SCHEME_WORDS = _Words("bearer", "basic")
_SECRET_WORDS = _Words("key", "token", "secret", "passw", "authorization", "credential", "cookie")
# "name": "value" inside text that holds JSON.
_JSON_PAIR = re.compile(rf'("{_SECRET_NAME}"\s*:\s*)"(?!\$\{{)((?:[^"\\]|\\.)*)"', re.IGNORECASE)
# name=value or name: value in free text (query strings, headers, log messages).
_TEXT_PAIR = re.compile(
    rf"\b({_SECRET_NAME})(\s*[=:]\s*)(?!\*\*\*)(?!\$\{{)(?!(?:Bearer|Basic)\s)(?!\s)([^\s\"',;&]+)", re.IGNORECASE
)

# The password of a URL's userinfo: scheme://user:password@host.
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)(?!\*\*\*@)(?!\$\{)([^\s/?#@]+)(@)")
# Query parameters whose names are short for credentials in URLs (signed URLs, OAuth codes, sessions); names that
# look like secrets anywhere (token, key, password, ...) are covered by _TEXT_PAIR.
_URL_CREDENTIAL = re.compile(
    r"([?&;](?:sig|signature|x-amz-signature|x-amz-credential|auth|pwd|pass|session|sessionid|sid|code)=)"
    r"(?!\*\*\*)(?!\$\{)([^&#\s\"']+)",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=4096)  # the same few names (log fields, JSON keys) are asked about again and again
def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.match(name))


def is_env_reference(value: str) -> bool:
    return bool(ENV_REFERENCE.match(value))


class Masker:
    """Masks by name and pattern, and replaces the known secret values it was given (4 characters or more)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        known = {value for value in secrets if value and len(value) >= MIN_SECRET_LENGTH}
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = sorted(known, key=len, reverse=True)

    def text(self, text: str) -> str:
        return self._text(text, None)

    def _text(self, text: str, found: list[str] | None) -> str:
        """`text` masked; each secret it held (a known value, or what a pattern cut) appended to `found` if given."""
        if not text:
            return text
        for secret in self._secrets:
            if found is not None and secret in text:
                found.append(secret)
            text = text.replace(secret, MASK)

        def cut(match: re.Match[str], secret: int, kept: str) -> str:
            if found is not None:
                found.append(match.group(secret))
            return kept

        # Each pattern runs only when the text holds what it cannot match without (a ":" for a pair or a URL's
        # userinfo, an "=" for a query parameter, a scheme's word, a secret's name): most text holds none of it, and
        # five regex passes over every summary, arguments and result were the largest part of the audit collector's own
        # work per record, and of every log line.
        # A substitution only puts "***" (and a space) where it cuts, so a character absent before it is absent after.
        colon, equals = ":" in text, "=" in text
        if colon and "@" in text:
            text = _USERINFO.sub(lambda m: cut(m, 2, f"{m.group(1)}{MASK}{m.group(3)}"), text)
        if equals:
            text = _URL_CREDENTIAL.sub(lambda m: cut(m, 2, f"{m.group(1)}{MASK}"), text)
        if _SCHEME_WORDS.in_(text):
            text = _BEARER.sub(lambda m: cut(m, 2, f"{m.group(1)} {MASK}"), text)
        if not (colon or equals) or not _SECRET_WORDS.in_(text):
            return text
        if colon and '"' in text:
            text = _JSON_PAIR.sub(lambda m: cut(m, 2, f'{m.group(1)}"{MASK}"'), text)
        return _TEXT_PAIR.sub(lambda m: cut(m, 3, f"{m.group(1)}{m.group(2)}{MASK}"), text)

    def quoted(self, text: str, given: Any) -> str:
        """`text`, a message that may quote `given` (the input it answers: a JSON-like value, or text), with what this
        masking hides of `given` hidden wherever `text` quotes it, and the rest (saip's own words, which a pattern
        could take for a secret: "the admin token: send ...") as it is."""
        quote = self.quoting(given)
        return quote(text) if quote is not None and text else text

    def quoting(self, given: Any) -> Callable[[str], str] | None:
        """What `quoted` does to a text that quotes `given`, or None when `given` holds nothing this masking hides
        (so an answer need not be read again). A quoted input that holds a secret becomes its masked form; a secret
        that appears on its own (the input reworded) becomes `***`."""
        masked: dict[str, str] = {}
        secrets: list[str] = []
        self._gather(given, None, masked, secrets)
        if not masked:
            return None
        originals = sorted(masked, key=len, reverse=True)
        alone = sorted({secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
        # In any case: a message may quote the input folded ("hostsAllow entry 'bearer sk-live-...'").
        alone_anywhere = re.compile("|".join(map(re.escape, alone)), re.IGNORECASE) if alone else None

        def quote(text: str) -> str:
            for original in originals:
                text = text.replace(original, masked[original])
            return alone_anywhere.sub(MASK, text) if alone_anywhere is not None else text

        return quote

    def _gather(self, value: Any, name: str | None, masked: dict[str, str], secrets: list[str]) -> None:
        """Each string of `value` this masking changes, with its masked form, and the secrets it held; walked without
        recursing, so input nested however deep (which its reader refuses) is read all the same."""
        pending: list[tuple[Any, str | None]] = [(value, name)]
        while pending:
            item, under = pending.pop()
            if isinstance(item, dict):
                for key, child in item.items():
                    pending.extend(((str(key), None), (child, str(key))))
            elif isinstance(item, list | tuple):
                pending.extend((child, under) for child in item)
            elif under is not None and is_secret_name(under) and item is not None and not isinstance(item, bool):
                secret = str(item)
                # A value too short to be told from the words around it ("a", "42") is not looked for in a message.
                if len(secret) >= MIN_SECRET_LENGTH and not is_env_reference(secret):
                    masked[secret] = MASK
                    secrets.append(secret)
            elif isinstance(item, str):
                found: list[str] = []
                hidden = self._text(item, found)
                if hidden != item:
                    masked[item] = hidden
                    secrets.extend(found)

    def value(self, value: Any, name: str | None = None) -> Any:
        """A JSON-like value with secrets masked; dictionaries are masked by key as well as by content."""
        if isinstance(value, dict):
            return {key: self.value(item, str(key)) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item, name) for item in value]
        if isinstance(value, str):
            if name is not None and is_secret_name(name) and not is_env_reference(value):
                return MASK
            return self.text(value)
        if name is not None and is_secret_name(name) and value is not None and not isinstance(value, bool):
            return MASK
        return value

    def json(self, value: Any, limit: int = 4000) -> str:
        """Masked compact JSON, cut to `limit` characters (audit summaries stay bounded)."""
        text = json.dumps(self.value(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)
        return text if len(text) <= limit else text[: limit - 1] + "…"


DEFAULT = Masker()


def mask_text(text: str) -> str:
    return DEFAULT.text(text)


def mask_value(value: Any) -> Any:
    return DEFAULT.value(value)


def mask_quoted(text: str, given: Any) -> str:
    return DEFAULT.quoted(text, given)
