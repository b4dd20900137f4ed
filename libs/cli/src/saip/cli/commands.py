"""What every command shares: the gateway its group was pointed at, and one call through the REST API whose
refusal becomes the command's error (exit 1, the gateway's sentence on stderr)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import click

from saip.cli.client import ApiError, GatewayApi
from saip.cli.hints import for_person
from saip.cli.output import json_option, listing, report


@dataclass(frozen=True)
class Target:
    """The gateway and the admin token from `saip --url ... --admin-token ...`."""

    url: str
    admin_token: str | None


def api(context: click.Context, *, timeout: float = 10.0) -> GatewayApi:
    target = context.find_object(Target)
    if target is None:  # a command invoked on its own, outside the `saip` group
        raise click.UsageError("run it as a `saip` command, which names the gateway (--url, --admin-token)")
    try:
        return GatewayApi(target.url, target.admin_token, timeout=timeout)
    except ApiError as exc:
        raise refusal(exc) from None


def refusal(exc: ApiError) -> click.ClickException:
    """What the gateway refused, or why it could not be reached, in the person's words."""
    return click.ClickException(for_person(str(exc)))


def segment(value: str) -> str:
    """A name or id as typed, as one segment of a REST path: quoted whole, so that a `/`, `?`, `#` or `..` in it stays
    part of the name instead of reaching another route (`saip tools delete a/../../clients/x` must not revoke a
    client); an empty one, which would name the listing itself, is refused."""
    if not value:
        raise click.UsageError(
            "the name or id is empty: give it as the listing shows it", click.get_current_context(silent=True)
        )
    # quote() keeps dots, and a client resolves a segment of only dots as the folder above.
    return quote(value, safe="") if value.strip(".") else value.replace(".", "%2E")


def call(context: click.Context, method: str, path: str, *, timeout: float = 10.0, **kwargs: Any) -> dict[str, Any]:
    """One call under /api/v1; its envelope."""
    with api(context, timeout=timeout) as gateway:
        try:
            return gateway.call(method, path, **kwargs)
        except ApiError as exc:
            raise refusal(exc) from None


def on_name(
    verb: str, doc: str, send: Callable[[click.Context, str], dict[str, Any]], *, hints: bool = True
) -> click.Command:
    """A command that acts on one NAME and reports the answer (publish, delete, unpublish ...); `hints` as `say`'s."""

    @click.command(verb, help=doc)
    @click.argument("name")
    @json_option
    @click.pass_context
    def command(context: click.Context, name: str, as_json: bool) -> None:
        report(send(context, name), as_json, hints=hints)

    return command


def listed(
    verb: str,
    doc: str,
    get: Callable[[click.Context], dict[str, Any]],
    show: Callable[[Any], None],
    *,
    entries: str | None = None,
) -> click.Command:
    """A command that prints what one GET answers: as `show` prints its data (`listing`, with `entries`), or the
    answer as JSON (--json)."""

    @click.command(verb, help=doc)
    @json_option
    @click.pass_context
    def command(context: click.Context, as_json: bool) -> None:
        listing(get(context), as_json, show, entries=entries)

    return command
