"""Classifying a failed HTTP reply from a model provider: a non-2xx status and its body and
headers turned into a :class:`ModelCallError` that says what happened, whether a retry can cure
it, and how long the server asks to wait.

Shared by every HTTP provider adapter through :class:`~adapters.models._http.JsonClient`; it
never sleeps or retries (that is the engine's job, engine/retry.py).
"""

from __future__ import annotations

import datetime
import email.utils
import math
import re
import time
from collections.abc import Callable, Mapping

import msgspec

from adapters.models._secrets import redact
from adapters.models.base import ModelCallError

__all__ = [
    "classify_status",
    "error_message",
    "parse_retry_after",
    "ratelimit_reset",
    "retry_info_delay",
]

# Phrases providers use when the prompt does not fit: OpenAI/vLLM/SGLang, Anthropic, Gemini, Ollama.
_CONTEXT_LENGTH_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "exceeds the maximum number of tokens",
    "input token count",
    "exceed context limit",  # Anthropic: the prompt and max_tokens together
)

# Phrases of a 400 that refuses a request for its size (a 413 always does): Anthropic
# ("request_too_large", "Request exceeds the maximum size"), Gemini ("Request payload size
# exceeds the limit: 20971520 bytes"), OpenAI ("Total image size is 50.56MB, which exceeds the
# allowed limit of 50MB"), and proxies' own pages ("413 Request Entity Too Large"). Too many
# images is the request too large by count, as the adapters' own check says it: Anthropic ("too
# many images and documents: 104 + 1 > 100", "Too much media: 0 document pages + 102 images >
# 100", from a model with a 200k-token window, under the 600 that check allows any model), vLLM
# ("At most 5 image(s) may be provided in one request", its --limit-mm-per-prompt).
_REQUEST_TOO_LARGE_MARKERS = (
    "request_too_large",
    "request exceeds the maximum",
    "payload size exceeds",
    "total image size",
    "request entity too large",
    "payload too large",
    "content too large",
    "maximum request body size",
    "too many images",
    "too much media",
    "image(s) may be provided",
)
# …and of one that refuses one image: Anthropic ("image exceeds 5 MB maximum", "At least one of
# the image dimensions exceed max allowed size"), servers that say it in other words.
_IMAGE_TOO_LARGE_MARKERS = (
    "image exceeds",
    "image dimensions exceed",
    "image is too large",
    "image too large",
    "image file size exceeds",
)

# 408/409 are what OpenAI documents as safe to retry; 529 is Anthropic's "overloaded".
_TRANSIENT_4XX = {408, 409}


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or HTTP-date) or ``retry-after-ms``.

    An HTTP-date is measured against the response's own ``Date`` header when present, so clock skew
    between us and the server does not matter; otherwise against ``now()``.
    """
    millis = headers.get("retry-after-ms")
    if millis:
        seconds = _finite(millis)
        if seconds is not None:
            return max(seconds / 1000.0, 0.0)
    value = headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    seconds = _finite(value)
    if seconds is not None:
        return max(seconds, 0.0)
    if _NUMBERISH.fullmatch(value):  # "nan", "inf", "-1e999": a number, but no wait
        return None
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(when - _reference_time(headers, now), 0.0)


_NUMBERISH = re.compile(r"[+-]?(?:nan|inf(?:inity)?|[\d.]+(?:e[+-]?\d+)?)", re.IGNORECASE)


def _finite(text: str) -> float | None:
    """``text`` as a finite number of seconds, or None (``float`` reads "nan" and "inf")."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]*>")


def _page_text(text: str) -> str:
    """An error body that is not JSON, on one line: an HTML page (a proxy's "502 Bad Gateway")
    by its title, or its text without tags."""
    if text.lstrip()[:1] == "<":
        title = _HTML_TITLE.search(text)
        text = title.group(1) if title else _HTML_TAG.sub(" ", text)
    return " ".join(text.split())


def error_message(body: bytes) -> str:
    """The human part of a provider error body (``error.message`` in all three formats), redacted."""
    text = ""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            text = str(err.get("message") or err.get("type") or "")
        elif isinstance(err, str):
            text = err
        if not text and isinstance(data.get("message"), str):
            text = data["message"]
    limit = 500
    if not text:  # no message field: the start of the body itself, on one line
        text, limit = _page_text(body[:65536].decode("utf-8", "replace")), 300
    text = " ".join(text.split())  # a multi-line message stays one line in a log or terminal
    # Redacted before it is cut: a key across the cut would no longer match, and half of it
    # would be shown.
    text = redact(text)
    if len(text) > limit:
        text = text[:limit] + "…"
    return text


_GO_DURATION = re.compile(r"(?:(\d+(?:\.\d*)?)h)?(?:(\d+(?:\.\d*)?)m(?!s))?"
                          r"(?:(\d+(?:\.\d*)?)s)?(?:(\d+(?:\.\d*)?)ms)?")


# Anthropic's windows, each with anthropic-ratelimit-{window}-{limit,remaining,reset}.
_ANTHROPIC_WINDOWS = ("requests", "tokens", "input-tokens", "output-tokens")


def ratelimit_reset(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """Seconds until an exhausted rate-limit window resets, if the headers say.

    OpenAI sends ``x-ratelimit-remaining-{requests,tokens}`` and ``x-ratelimit-reset-…`` (a
    duration such as ``1s``, ``6m0s`` or ``20ms``) with every reply, and not always a
    ``Retry-After`` with a 429; Anthropic ``anthropic-ratelimit-{window}-remaining`` and
    ``…-reset``, an RFC 3339 time (measured against the reply's ``Date``, as a
    ``Retry-After`` date is), for its requests, tokens, input-tokens and output-tokens
    windows. The windows that are used up say how long to wait.
    """
    waits = []
    for window in ("requests", "tokens"):
        if headers.get(f"x-ratelimit-remaining-{window}", "").strip() != "0":
            continue
        match = _GO_DURATION.fullmatch(headers.get(f"x-ratelimit-reset-{window}", "").strip())
        if match and any(match.groups()):
            h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
            waits.append(3600 * h + 60 * m + s + ms / 1000)
    for window in _ANTHROPIC_WINDOWS:
        if headers.get(f"anthropic-ratelimit-{window}-remaining", "").strip() != "0":
            continue
        when = _rfc3339(headers.get(f"anthropic-ratelimit-{window}-reset", ""))
        if when is not None:
            waits.append(max(when - _reference_time(headers, now), 0.0))
    return max(waits) if waits else None


def _rfc3339(text: str) -> float | None:
    """An RFC 3339 time (``2025-08-21T12:40:59Z``) as a POSIX timestamp, or None."""
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if when.tzinfo is None:  # RFC 3339 always has an offset; a bare time is not one
        return None
    return when.timestamp()


def _reference_time(headers: Mapping[str, str], now: Callable[[], float]) -> float:
    """The reply's own ``Date`` when it has a valid one (so clock skew does not count), else
    ``now()``."""
    date = headers.get("Date")
    if date:
        try:
            return email.utils.parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError, IndexError):
            pass
    return now()


_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?)s\s*")


def _first_known(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def retry_info_delay(body: bytes) -> float | None:
    """Seconds to wait from a ``google.rpc.RetryInfo`` detail in an error body, if there is one.

    Google's APIs (Gemini among them) send their back-off hint this way, in the JSON body of a
    429, not as a ``Retry-After`` header: ``{"error": {"details": [{"@type": "…RetryInfo",
    "retryDelay": "30s"}]}}`` (a protobuf Duration: seconds with an ``s``).
    """
    try:
        data = msgspec.json.decode(body)
        details = data["error"]["details"]
    except (msgspec.DecodeError, KeyError, TypeError):
        return None
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            match = _DURATION.fullmatch(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


# Faults every call of the model would meet, which no wait cures: (statuses, error codes,
# message markers, kind, what to say). Out of credit or over a spend limit: OpenAI sends a 429
# whose code says which (its type may be insufficient_quota or not); Anthropic a 429
# rate_limit_error with no retry-after whose details name its monthly cap, a 400 ("credit
# balance is too low", or a spend limit of the account's own: "you have reached your
# specified … usage limits") or a 402 billing_error; Gemini, its prepaid credit spent, a 402
# (a 429 before) saying "prepayment credits are depleted"; not "exceeded your current quota",
# which Gemini also says of its per-minute quotas, in 429s that are rate limits. A refused request
# field (a temperature a reasoning model does not take, an unknown Gemini field, a sampling
# setting Anthropic's newer models no longer take: "`temperature` is deprecated for this
# model.", or a temperature beside extended thinking: "`temperature` may only be set to 1 when
# thinking is enabled", "… or in adaptive mode" since adaptive thinking): a 400.
_UNCURABLE: tuple[tuple[frozenset[int], frozenset[str], tuple[str, ...], str, str], ...] = (
    (frozenset({400, 402, 403, 429}),
     frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active",
                "credit_balance_exhausted", "organization_spend_limit_exceeded",
                "project_spend_limit_exceeded", "organization_usage_limit_exceeded",
                "enforced_spend_limit_reached", "billing_error"}),
     ("credit balance is too low", "you have reached your specified",
      "prepayment credits are depleted"), "quota",
     "the account has no quota or credit left (HTTP {status}): {detail}. Add credit or raise "
     "the spending limit, then rerun"),
    (frozenset({400}),
     frozenset({"unsupported_parameter", "unsupported_value", "unknown_parameter"}),
     ("unsupported parameter", "unsupported value",
      "invalid json payload received. unknown name", "is deprecated for this model",
      "may only be set to 1 when thinking is enabled"),
     "unsupported_parameter",
     "the model refuses a request parameter (HTTP {status}): {detail}. Leave that option out "
     "for this model (say --temperature, or a field of extra)"),
    # Gemini 3 refuses a replayed function call without the thoughtSignature it came with
    # ("Function call is missing a thought_signature in functionCall parts"): every retry,
    # and every later step of the trajectory, sends the same turn.
    (frozenset({400}), frozenset(), ("missing a thought_signature",), "request_defect",
     "the request sent back a function call without the thought signature the model gave it "
     "(HTTP {status}): {detail}. No retry cures it: a trajectory recorded before vaot kept "
     "signatures cannot go on with this model; any other is a defect of vaot's, to report"),
)


# OpenAI's 429 for one request over the tokens-per-minute limit ("Request too large for gpt-4o
# in organization org-… on tokens per min (TPM): Limit 30000, Requested 36278. The input or
# output tokens must be reduced in order to run successfully."), lowercased.
_OVER_THE_MINUTE = "request too large for"

# Gemini lists each quota exceeded as "…, limit: 0, model: …": the list's own field, not any
# "limit: 0" a sentence may hold ("remaining limit: 0" would say nothing of the tier).
_NO_LIMIT = re.compile(r"(?:^|,)[ \t]*limit: 0(?![\d.])", re.MULTILINE)
# The server's own advice to wait, quoted in a stop that says no wait cures it.
_RETRY_IN = re.compile(r"\s*Please retry in [\d.]+\s*m?s\b\.?", re.IGNORECASE)


def _quota_no_wait_cures(body: bytes) -> str | None:
    """What a 429 says of a quota no wait within a run cures, if it does (each retry of each
    trajectory would meet it again): ``"none"`` for a quota of 0, the model having none on the
    key's tier (Gemini: a ``QuotaFailure`` violation's ``quotaValue`` "0", its message
    "limit: 0", as its free tier answers for models it does not serve); ``"daily"`` for a
    per-day quota used up (a violation whose ``quotaId`` names ``PerDay``)."""
    try:
        error = msgspec.json.decode(body)["error"]
        details = error["details"]
    except (msgspec.DecodeError, KeyError, TypeError):
        return None
    violations = [violation for detail in (details if isinstance(details, list) else ())
                  if isinstance(detail, dict)
                  and str(detail.get("@type", "")).endswith("QuotaFailure")
                  for violation in detail.get("violations") or ()
                  if isinstance(violation, dict)]
    if any(str(v.get("quotaValue", "")).strip() == "0" for v in violations) or (
            violations and _NO_LIMIT.search(str(error.get("message", "")))):
        return "none"
    if any("PerDay" in str(v.get("quotaId", "")) for v in violations):
        return "daily"
    return None


def _error_codes(body: bytes) -> set[str]:
    """The machine-readable names an error body gives (``error.type``, ``error.code``, and
    Anthropic's ``error.details.error_code``, which alone tells its spend cap from a rate
    limit: both are a 429 ``rate_limit_error``)."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return set()
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return set()
    codes = {str(err[k]) for k in ("type", "code", "status") if isinstance(err.get(k), str)}
    details = err.get("details")
    if isinstance(details, dict) and isinstance(details.get("error_code"), str):
        codes.add(details["error_code"])
    return codes


def _too_large(status: int, said: str) -> tuple[str, str] | None:
    """(what, kind) when a reply refuses the request for its size: any 413, or a 400 whose
    lowercased ``said`` (message and body) says so; else None."""
    if any(m in said for m in _IMAGE_TOO_LARGE_MARKERS) and status in (400, 413):
        return "an image", "image_too_large"
    if status == 413 or (status == 400 and any(m in said for m in _REQUEST_TOO_LARGE_MARKERS)):
        return "the request", "request_too_large"
    return None


def classify_status(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    provider: str,
    model: str,
    url: str,
    key_env: str | None,
    now: Callable[[], float] = time.time,
) -> ModelCallError:
    """Map a non-2xx HTTP reply to a classified :class:`ModelCallError`."""
    detail = error_message(body)
    where = f"{provider}:{model}"
    codes = _error_codes(body[:65536])
    said = detail.lower()
    for statuses, known_codes, markers, kind, text in _UNCURABLE:
        if status in statuses and (codes & known_codes or any(m in said for m in markers)):
            # The text goes on after the detail with its own sentence: no ".." between them.
            said_so = detail.rstrip().removesuffix(".")
            return ModelCallError(f"{where}: " + text.format(status=status, detail=said_so),
                                  retry="no", kind=kind, status=status)
    no_wait_cures = _quota_no_wait_cures(body[:65536]) if status == 429 else None
    # The text goes on after the detail with its own sentence: no ".." between them. A quota
    # no wait cures drops the server's "Please retry in 21.5s", which would contradict it.
    said_so = (_RETRY_IN.sub("", detail) if no_wait_cures else detail).rstrip().removesuffix(".")
    if no_wait_cures == "none":
        return ModelCallError(
            f"{where}: the key's tier has no quota for this model (HTTP 429, limit 0): "
            f"{said_so}. No wait cures it; enable billing for the key's project, or use a "
            "model its tier serves", retry="no", kind="quota", status=status)
    if no_wait_cures == "daily":
        return ModelCallError(
            f"{where}: the daily request quota is used up (HTTP 429): {said_so}. It resets once "
            "a day (Gemini: midnight Pacific time); rerun then, or raise the quota",
            retry="no", kind="quota", status=status)
    if "model_not_found" in codes:  # OpenAI says so with a 403 or a 404, not only a 404
        return ModelCallError(
            f"{where}: model not found (HTTP {status}) at {url}: {detail}. Check the model "
            "name, and that the key's project may use it",
            retry="no", kind="not_found", status=status)
    if status == 429 and _OVER_THE_MINUTE in said:
        # OpenAI refuses a single request that asks for more tokens (its prompt plus its
        # max_tokens) than the key's tokens-per-minute limit with a 429 rate_limit_exceeded
        # that no wait cures: each retry would pause the model's calls for nothing.
        return ModelCallError(
            f"{where}: one request asks for more tokens than the key's per-minute limit allows "
            f"(HTTP 429): {said_so}. No wait cures it: lower --max-tokens (it counts toward "
            "the request), send fewer images (--image-history original+last:K), or raise the "
            "account's rate-limit tier",
            retry="no", kind="request_too_large", status=status)
    if status == 429:
        return ModelCallError(
            f"{where}: rate limited (HTTP 429): {detail}",
            retry="rate_limit",
            kind="http_429",
            retry_after=_first_known(parse_retry_after(headers, now), retry_info_delay(body)),
            # Only a floor: the 429 may come from a limit these headers do not describe.
            wait_at_least=ratelimit_reset(headers, now),
            status=status,
        )
    if status >= 500 or status in _TRANSIENT_4XX:
        return ModelCallError(
            f"{where}: server error (HTTP {status}) at {url}: {detail}",
            retry="transient",
            kind=f"http_{status}",
            retry_after=_first_known(parse_retry_after(headers, now), retry_info_delay(body)),
            status=status,
        )
    # Gemini says a key is wrong with 400 INVALID_ARGUMENT; only the reason names the key.
    if status in (401, 403) or (status == 400 and b"API_KEY_INVALID" in body[:65536]):
        if key_env:
            hint = f"the API key read from ${key_env} was rejected; check that variable"
        else:
            hint = ("no API key was sent; name the variable holding one with --api-key-env "
                    "(api_key_env in a config file)")
        return ModelCallError(
            f"{where}: not authorised (HTTP {status}) at {url}: {hint}. Server said: {detail}",
            retry="no",
            kind="auth",
            status=status,
        )
    lowered = detail.lower() + body[:2000].decode("utf-8", "replace").lower()
    said_so = detail.rstrip().removesuffix(".")  # a sentence of ours follows it
    if status in (400, 413) and any(m in lowered for m in _CONTEXT_LENGTH_MARKERS):
        return ModelCallError(
            f"{where}: the request does not fit the model's context window (HTTP {status}): "
            f"{said_so}. Send fewer images (--image-history original+last:K) or lower "
            "--max-tokens",
            retry="no",
            kind="context_length",
            status=status,
        )
    too_large = _too_large(status, lowered)
    if too_large is not None:
        what, kind = too_large
        # A 413 may come from a proxy in front of the API or of a server of one's own, whose
        # limit (nginx's default 1 MiB) is the thing to change, not the experiment.
        own = ("; a server or proxy of your own at that URL can take more instead (nginx: "
               "client_max_body_size)") if status == 413 else ""
        return ModelCallError(
            f"{where}: {what} is too large for the API (HTTP {status}) at {url}: {said_so}. "
            "No retry cures it: send fewer images (--image-history original+last:K) or smaller "
            f"ones in the dataset (vaot never resizes what a model is shown){own}",
            retry="no",
            kind=kind,
            status=status,
        )
    if status == 404:
        return ModelCallError(
            f"{where}: not found (HTTP 404) at {url}: {detail}. Check the model name and base_url.",
            retry="no",
            kind="not_found",
            status=status,
        )
    return ModelCallError(
        f"{where}: request rejected (HTTP {status}) at {url}: {detail}",
        retry="no",
        kind="bad_request" if status == 400 else f"http_{status}",
        status=status,
    )
