"""``/docs``: the API reference as one plain HTML page made from the OpenAPI schema.

FastAPI's own ``/docs`` and ``/redoc`` load Swagger UI and ReDoc from a CDN, so they are blank
without internet; this page needs nothing but the server (no script at all), and the schema
itself stays at ``/openapi.json`` for any OpenAPI tool.
"""

from __future__ import annotations

import html
import json

__all__ = ["api_page"]

METHODS = ("get", "post", "put", "patch", "delete")


def _schema_text(schema: dict | None) -> str:
    if not schema:
        return ""
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        return f'<a href="#schema-{html.escape(name)}">{html.escape(name)}</a>'
    return f"<code>{html.escape(json.dumps(schema, separators=(',', ':'))[:300])}</code>"


def _operation(path: str, method: str, op: dict) -> str:
    parts = [
        f'<section class="op" id="{html.escape(op.get("operationId", path + method))}">'
        f"<h3><code>{method.upper()} {html.escape(path)}</code></h3>"
    ]
    if op.get("summary"):
        parts.append(f"<p><b>{html.escape(op['summary'])}</b></p>")
    if op.get("description"):
        parts.append(f"<p>{html.escape(op['description'])}</p>")
    params = op.get("parameters", [])
    if params:
        rows = "".join(
            f"<tr><td><code>{html.escape(p['name'])}</code></td><td>{html.escape(p['in'])}</td>"
            f"<td>{'yes' if p.get('required') else 'no'}</td>"
            f"<td>{_schema_text(p.get('schema'))}</td>"
            f"<td>{html.escape(p.get('description', ''))}</td></tr>"
            for p in params
        )
        parts.append(
            "<table><thead><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th>"
            f"<th>description</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    if body:
        parts.append(f"<p>Body (JSON): {_schema_text(body.get('schema'))}</p>")
    responses = op.get("responses", {})
    if responses:
        items = "".join(
            f"<li><code>{html.escape(code)}</code> {html.escape(r.get('description', ''))}</li>"
            for code, r in responses.items()
        )
        parts.append(f"<ul>{items}</ul>")
    parts.append("</section>")
    return "".join(parts)


def api_page(schema: dict) -> str:
    """The whole reference: every operation, then every schema with its fields.

    Parameters
    ----------
    schema : dict
        An OpenAPI document (``app.openapi()``): ``info``, ``paths`` and
        ``components.schemas``.

    Returns
    -------
    str
        A complete HTML document without any script.

    References
    ----------
    OpenAPI Initiative. OpenAPI Specification, version 3.1.0 (https://spec.openapis.org/oas/v3.1.0).
    WHATWG. HTML Living Standard (https://html.spec.whatwg.org/).

    Examples
    --------
    >>> schema = {"info": {"title": "rankci", "version": "1.0"},
    ...           "paths": {"/api/health": {"get": {"summary": "Health", "operationId": "health"}}},
    ...           "components": {"schemas": {"Score": {"properties": {"model": {"type": "string"}},
    ...                                                "required": ["model"]}}}}
    >>> page = api_page(schema)
    >>> "<title>rankci - API</title>" in page, "<code>GET /api/health</code>" in page
    (True, True)
    >>> 'id="schema-Score"' in page, "<script" in page
    (True, False)
    """
    info = schema.get("info", {})
    ops = []
    for path, entry in schema.get("paths", {}).items():
        for method in METHODS:
            if method in entry:
                ops.append(_operation(path, method, entry[method]))
    models = []
    for name, model in sorted(schema.get("components", {}).get("schemas", {}).items()):
        fields = "".join(
            f"<tr><td><code>{html.escape(field)}</code></td>"
            f"<td>{'yes' if field in model.get('required', []) else 'no'}</td>"
            f"<td>{_schema_text({k: v for k, v in spec.items() if k != 'description'})}</td>"
            f"<td>{html.escape(str(spec.get('description', '')))}</td></tr>"
            for field, spec in model.get("properties", {}).items()
        )
        description = html.escape(model.get("description", ""))
        models.append(
            f'<section id="schema-{html.escape(name)}"><h3>{html.escape(name)}</h3>'
            f"<p>{description}</p><table><thead><tr><th>field</th><th>required</th>"
            f"<th>schema</th><th>description</th></tr></thead><tbody>{fields}</tbody></table>"
            "</section>"
        )
    style = (
        "body{font:15px/1.5 system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:16px;"
        "color:#1d2733}table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid "
        "#d9dee5;padding:3px 6px;text-align:left;vertical-align:top}section.op{border-top:1px "
        "solid #d9dee5;margin-top:14px}code{font-size:.9em}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(info.get('title', 'API'))} - API</title><style>{style}</style>"
        f"</head><body><h1>{html.escape(info.get('title', 'API'))} "
        f"<small>{html.escape(str(info.get('version', '')))}</small></h1>"
        f"<p>{html.escape(info.get('description', ''))}</p>"
        '<p>The machine-readable schema: <a href="openapi.json">openapi.json</a>.</p>'
        f'<h2>Operations</h2>{"".join(ops)}<h2 id="schemas">Schemas</h2>{"".join(models)}'
        "</body></html>\n"
    )
