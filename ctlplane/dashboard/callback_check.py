"""Refuse what is not a callback request of this dashboard before Dash dispatches it: Dash answers 500 when
a crafted body breaks it, and a malformed request is the client's error (400)."""

from __future__ import annotations

import json
from typing import Any

from dash import Output
from dash._validate import validate_output_spec
from dash.exceptions import CallbackException
from fastapi.responses import JSONResponse


def id_has(item: object, key: str) -> bool:
    return isinstance(item, dict) and isinstance(item.get("id"), dict) and isinstance(item["id"].get(key), str)


def _is_reference(item: object) -> bool:
    """A component property reference as Dash sends it: {"id": str or {...}, "property": str, ...}."""
    return isinstance(item, dict) and isinstance(item.get("id"), str | dict) and isinstance(item.get("property"), str)


def _references(items: object, count: int | None) -> bool:
    """A list of references, or of lists of them (pattern-matching ALL), `count` long when given."""
    if not isinstance(items, list) or (count is not None and len(items) != count):
        return False
    return all(_is_reference(i) or (isinstance(i, list) and all(_is_reference(j) for j in i)) for i in items)


def callback_problem(body: object, callback_map: dict[str, Any]) -> str | None:
    """Why `body` is not a callback request of this app, or None. Dash dispatches whatever it is given
    and answers 500 when it breaks on it; a request that is not one of ours is the client's error."""
    if not isinstance(body, dict):
        return "not a JSON object"
    output = body.get("output")
    spec = callback_map.get(output) if isinstance(output, str) else None
    if spec is None:
        return "no such callback output"
    if not _references(body.get("inputs"), len(spec.get("inputs", []))):
        return f"inputs: expected {len(spec.get('inputs', []))} component references"
    if not _references(body.get("state", []), len(spec.get("state", []))):
        return f"state: expected {len(spec.get('state', []))} component references"
    outputs, declared = body.get("outputs"), spec["output"]
    single = not isinstance(declared, list | tuple) and not isinstance(declared.component_id, dict)
    if not (_is_reference(outputs) or (not single and _references(outputs, None))):
        return "outputs: not component references"  # a list only for several or pattern-matching outputs
    try:
        # Dash's own check of the outputs against the callback's, which it runs only after dispatching
        # and answers with 500 (dash._validate: "for security and internal debugging")
        validate_output_spec(declared, outputs, Output)  # type: ignore[no-untyped-call]  # unannotated in Dash
    except (CallbackException, TypeError, ValueError, KeyError) as exc:
        return f"outputs: {exc}"
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "changedPropIds: not a list of strings"
    return None


class CallbackShapeCheck:
    """ASGI middleware before Dash's own: a POST to the callback route whose body is not a callback request
    of this app is answered 400, not dispatched (Dash would answer 500). The body is read here (the
    request guard in front has authenticated the request and capped its size) and handed on unchanged."""

    def __init__(self, app: Any, callback_map: dict[str, Any], path: str) -> None:
        self.app = app
        self.callback_map = callback_map
        self.path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            problem = callback_problem(json.loads(body), self.callback_map)
        except ValueError:
            problem = "not JSON"
        if problem is not None:
            await JSONResponse({"error": "BadRequest", "message": problem}, status_code=400)(scope, receive, send)
            return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        await self.app(scope, replay, send)
