"""Schemathesis hooks for `scripts/schemathesis/run`.

Two things the document alone cannot give the fuzzer:

- `api_envelope`, a check of the spec's rules that are not schema-shaped: every response
  carries `X-Request-Id`; every error is exactly `{error: {code, message}, request_id}`
  with the one code of its status among the spec's eight; every JSON success carries the
  same `request_id` as its header.
- Real records. Generated ids are random, so without help nearly every read by id, every
  write and every search would only ever see 404 or an empty answer. `map_case` swaps a
  generated id (or parent, owner, company, phone number, e-mail address) for one of the
  workspace's own on about half of the positive cases, chosen from the generated value so
  that runs stay reproducible. The pool is read from the JSON file named by
  `RECRUITD_FUZZ_POOL`, written by the run script from the API before fuzzing starts.
"""

import json
import os
import zlib

import schemathesis
from schemathesis.core.parameters import ParameterLocation

STATUS_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN_SCOPE",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    429: "RATE_LIMITED",
    500: "INTERNAL_ERROR",
    503: "SERVICE_UNAVAILABLE",
}


def _header(response, name):
    values = response.headers.get(name.lower())
    if not values:
        return None
    return values[0] if isinstance(values, list) else values


@schemathesis.check
def api_envelope(ctx, response, case):
    """X-Request-Id everywhere; the spec's error envelope and codes; request_id in bodies."""
    rid = _header(response, "X-Request-Id")
    if not rid:
        raise AssertionError("response has no X-Request-Id header")
    status = response.status_code
    if status >= 400:
        if status not in STATUS_CODES:
            raise AssertionError(f"status {status} is not one the spec lists")
        content_type = _header(response, "Content-Type") or ""
        if not content_type.startswith("application/json"):
            raise AssertionError(f"error {status} has Content-Type {content_type!r}")
        try:
            body = json.loads(response.content)
        except ValueError as e:
            raise AssertionError(f"error {status} body is not JSON: {e}") from None
        if not isinstance(body, dict) or set(body) != {"error", "request_id"}:
            raise AssertionError(f"error body is not exactly {{error, request_id}}: {body!r}")
        err = body["error"]
        if not isinstance(err, dict) or set(err) != {"code", "message"}:
            raise AssertionError(f"error is not exactly {{code, message}}: {err!r}")
        if err["code"] != STATUS_CODES[status]:
            raise AssertionError(f"HTTP {status} carries code {err['code']!r}, not {STATUS_CODES[status]}")
        if not isinstance(err["message"], str) or not err["message"]:
            raise AssertionError("error message is not a non-empty string")
        if body["request_id"] != rid:
            raise AssertionError("request_id differs from X-Request-Id")
        if status == 405 and not _header(response, "Allow"):
            raise AssertionError("405 without Allow")
        if status in (429, 503) and not _header(response, "Retry-After"):
            raise AssertionError(f"{status} without Retry-After")
        return True
    if status == 302:
        if not _header(response, "Location"):
            raise AssertionError("302 without Location")
        return True
    if case.operation.path != "/v1/openapi.json" and response.content:
        body = json.loads(response.content)
        if body.get("request_id") != rid:
            raise AssertionError("request_id in the body differs from X-Request-Id")
    return True


# ---------------------------------------------------------------------------------------
# Real records for positive cases.

_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        path = os.environ.get("RECRUITD_FUZZ_POOL")
        _POOL = json.load(open(path)) if path else {}
    return _POOL


def _pick(values, seed, keep=2):
    """A value of the pool, chosen by `seed` (a generated value), except on one case in
    `keep`, where the generated value stays (half of the cases by default)."""
    if not values:
        return None
    h = zlib.crc32(repr(seed).encode())
    if h % keep == 0:
        return None
    return values[(h // keep) % len(values)]


_PARENT_POOLS = {"candidate": "candidates", "contact": "contacts", "company": "companies", "job": "jobs"}


def _entity(path):
    # /v1/<entity>/... ; the download path's records are attachments.
    return path.split("/")[2]


@schemathesis.hook
def map_case(ctx, case):
    meta = case.meta
    pool = _pool()
    if meta is None or not pool:
        return case
    op = case.operation
    path, method = op.path, op.method.upper()
    if not meta.is_negative_at(ParameterLocation.PATH) and case.path_parameters and "id" in case.path_parameters:
        entity = _entity(path)
        real = _pick(pool.get("ids", {}).get(entity), case.path_parameters["id"])
        if real is not None:
            case.path_parameters = {**case.path_parameters, "id": real}
    if not meta.is_negative_at(ParameterLocation.QUERY) and case.query:
        if path == "/v1/search/phone" and isinstance(case.query.get("number"), str):
            real = _pick(pool.get("phones"), case.query["number"])
            if real is not None:
                case.query = {**case.query, "number": real}
        if path == "/v1/search/email" and isinstance(case.query.get("address"), str):
            real = _pick(pool.get("emails"), case.query["address"])
            if real is not None:
                case.query = {**case.query, "address": real}
    body = case.body
    if method in ("POST", "PATCH") and isinstance(body, dict) and not meta.is_negative_at(ParameterLocation.BODY):
        body = dict(body)
        if isinstance(body.get("parent_type"), str) and "parent_id" in body:
            real = _pick(pool.get("ids", {}).get(_PARENT_POOLS.get(body["parent_type"], "")), body["parent_id"])
            if real is not None:
                body["parent_id"] = real
        for field in ("author_email", "owner_email"):
            if isinstance(body.get(field), str):
                # Mostly a member: any other address refuses a task outright.
                real = _pick(pool.get("member_emails"), body[field], keep=8)
                if real is not None:
                    body[field] = real
        if isinstance(body.get("owning_recruiter_id"), str):
            real = _pick(pool.get("ids", {}).get("users"), body["owning_recruiter_id"])
            if real is not None:
                body["owning_recruiter_id"] = real
        if isinstance(body.get("company_id"), str):
            real = _pick(pool.get("ids", {}).get("companies"), body["company_id"])
            if real is not None:
                body["company_id"] = real
        case.body = body
    return case
