"""A fake Gemini server (``POST /v1beta/models/{model}:generateContent``).

Validates what the real API requires — ``x-goog-api-key`` (or ``?key=``), ``contents`` with roles
``user``/``model``, parts holding ``text`` or ``inline_data`` with valid base64 images, a text-only
``systemInstruction``, known ``generationConfig`` fields; the ``tools`` list's shape (a declaration's
``parameters`` in the OpenAPI subset: arrays need ``items``; or ``parametersJsonSchema``, not
both), ``functionCall`` parts only in model turns and only with tools declared, a turn's first call
carrying the ``thoughtSignature`` this fake gave it (Gemini 3 signs only that one), and answered by as many
``functionResponse`` parts, by name and id, in the user turn right after, a turn holding
nothing else (text and images follow in a user turn of their own) — and answers in the real
reply shape, with ``logprobsResult`` and signed function calls on demand. Extra faults: ``safety_block`` (prompt blocked, no candidates),
``finish_safety`` (candidate stopped for SAFETY, no text), candidates ended by other reasons of
the API's enum (:data:`FINISH_FAULTS`: MALFORMED_RESPONSE after a part of a reply, OTHER,
MISSING_THOUGHT_SIGNATURE, NO_IMAGE), ``empty_candidates``, ``429_no_quota``
(a quota of 0: the free tier's answer for a model it does not serve, with a retry delay all
the same), ``prepay_depleted`` (HTTP 402: the project's prepaid credit is spent).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.fakes.faults import register_extra_faults
from tests.fakes.server import (
    TOOL_NAME,
    FakeServer,
    ReplySpec,
    RequestView,
    check_image_b64,
    check_schema,
    logprobs_for,
    main,
    tool_arguments,
)

__all__ = ["FINISH_FAULTS", "FakeGemini"]

_CONFIG_FIELDS = {
    "maxOutputTokens", "temperature", "topP", "topK", "seed", "stopSequences", "candidateCount",
    "responseLogprobs", "logprobs", "responseMimeType", "presencePenalty", "frequencyPenalty",
    "thinkingConfig", "responseSchema",
}  # fmt: skip

# fault → (finishReason, the text the candidate holds): 200 replies whose candidate ended so.
FINISH_FAULTS = {
    "finish_safety": ("SAFETY", ""),
    "finish_malformed_response": ("MALFORMED_RESPONSE", "Step 1 (Text): The"),
    "finish_other": ("OTHER", ""),
    "finish_missing_thought_signature": ("MISSING_THOUGHT_SIGNATURE", ""),
    "finish_no_image": ("NO_IMAGE", ""),
}

register_extra_faults(
    ["safety_block", *FINISH_FAULTS, "empty_candidates", "429_retry_info", "429_no_quota",
     "prepay_depleted", "bad_key", "413", "too_large_400"])


class FakeGemini(FakeServer):
    """Speaks generateContent; see :class:`tests.fakes.server.FakeServer` for the arguments."""

    provider = "gemini"
    prefix = "/v1beta"
    auth_headers = ("x-goog-api-key",)

    def _routes(self) -> list[web.RouteDef]:
        return [web.post("/v1beta/models/{model_action}", self.handle)]

    def _presented_key(self, request: web.Request) -> str | None:
        return request.headers.get("x-goog-api-key") or request.query.get("key") or None

    def _error_body(self, status: int, message: str, etype: str) -> dict:
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 402: "RESOURCE_EXHAUSTED",
                 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
                 504: "DEADLINE_EXCEEDED"}  # fmt: skip
        if "context length" in message:
            message = (
                "The input token count (99999) exceeds the maximum number of tokens allowed (8192)."
            )
        return {
            "error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}
        }

    def _validate(self, request: web.Request, body: Any) -> list[str]:
        problems: list[str] = []
        model, _, action = request.match_info["model_action"].partition(":")
        if action != "generateContent" or not model:
            return [f"unknown method {request.match_info['model_action']!r}"]
        if not isinstance(body, dict):
            return ["body must be a JSON object"]
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            return ["contents must be a non-empty array"]
        if "tools" in body:
            self._check_tools(body["tools"], problems)
        for i, content in enumerate(contents):
            where = f"contents[{i}]"
            if not isinstance(content, dict) or content.get("role") not in ("user", "model"):
                problems.append(f"{where}.role must be 'user' or 'model'")
                continue
            self._check_parts(content.get("parts"), where, problems, allow_images=True,
                              role=content["role"])
        if not problems:
            self._check_function_turns(contents, bool(body.get("tools")), problems)
        system = body.get("systemInstruction", body.get("system_instruction"))
        if system is not None:
            self._check_parts(system.get("parts") if isinstance(system, dict) else None,
                              "systemInstruction", problems, allow_images=False)  # fmt: skip
        config = body.get("generationConfig", {})
        if not isinstance(config, dict):
            problems.append("generationConfig must be an object")
        else:
            unknown = set(config) - _CONFIG_FIELDS
            if unknown:
                problems.append(f"unknown generationConfig fields {sorted(unknown)}")
            if "logprobs" in config and not config.get("responseLogprobs"):
                problems.append("logprobs requires responseLogprobs=true")
        return problems

    @staticmethod
    def _check_tools(tools: Any, problems: list[str]) -> None:
        if not isinstance(tools, list):
            problems.append("tools must be an array")
            return
        for n, tool in enumerate(tools):
            declarations = tool.get("functionDeclarations", tool.get("function_declarations")) if (
                isinstance(tool, dict)) else None
            if not isinstance(declarations, list):
                problems.append(f"tools[{n}]: expected functionDeclarations (an array)")
                continue
            for m, declaration in enumerate(declarations):
                at = f"GenerateContentRequest.tools[{n}].function_declarations[{m}]"
                if not isinstance(declaration, dict):
                    problems.append(f"* {at}: must be an object")
                    continue
                name = declaration.get("name")
                if not isinstance(name, str) or not TOOL_NAME.match(name):
                    problems.append(f"* {at}.name: Invalid function name. Must start with a "
                                    "letter or an underscore. Must be alphameric (a-z, A-Z, "
                                    "0-9), underscores (_), dots (.) or dashes (-), with a "
                                    "maximum length of 64.")
                if "parameters" in declaration and "parametersJsonSchema" in declaration:
                    problems.append(f"* {at}: parameters and parameters_json_schema are "
                                    "mutually exclusive")
                elif "parameters" in declaration:
                    check_schema(declaration["parameters"], f"{at}.parameters", problems,
                                 missing_items="* {where}.items: missing field.")
                elif "parametersJsonSchema" in declaration and not isinstance(
                        declaration["parametersJsonSchema"], dict):
                    problems.append(f"* {at}.parameters_json_schema: must be an object")

    @staticmethod
    def _check_function_turns(contents: list, declared: bool, problems: list[str]) -> None:
        """Each model turn's function calls answered, one response each, in the next turn."""
        def parts_of(content: dict, key: str) -> list[dict]:
            return [p[key] for p in content["parts"] if key in p]

        for i, content in enumerate(contents):
            calls = parts_of(content, "functionCall")
            responses = parts_of(content, "functionResponse")
            if calls and not declared:
                problems.append(f"contents[{i}]: a function call turn needs tools declared")
            # Gemini 3 signs a turn's first call alone (parallel calls carry none), and
            # refuses the turn without that signature.
            first = next((p for p in content["parts"] if "functionCall" in p), None)
            if first is not None and not first.get("thoughtSignature"):
                name = first["functionCall"].get("name")
                problems.append(f"Function call is missing a thought_signature in "
                                f"functionCall parts. Additional data, function call "
                                f"`default_api:{name}`, position {i + 1}.")
            if responses and len(responses) != len(content["parts"]):
                # Gemini ends a function response turn at its responses: text or an image
                # beside them is refused (with this misleading message); they go in a user
                # turn of their own after it.
                problems.append("Requests ending with a model turn are not supported.")
            if responses:
                before = parts_of(contents[i - 1], "functionCall") if i else []
                if not before:
                    problems.append("Please ensure that function response turn comes "
                                    "immediately after a function call turn.")
                elif len(before) != len(responses):
                    problems.append("Please ensure that the number of function response parts "
                                    "is equal to the number of function call parts of the "
                                    "function call turn.")
                elif [(c.get("name"), c.get("id")) for c in before] != [
                        (r.get("name"), r.get("id")) for r in responses]:
                    problems.append(f"contents[{i}]: function responses must name the calls "
                                    "they answer, in order (name and id)")
            if calls and i + 1 < len(contents) and not parts_of(contents[i + 1],
                                                                 "functionResponse"):
                problems.append("Please ensure that function call turn comes immediately "
                                "after a user turn or after a function response turn.")

    def _check_parts(
        self, parts: Any, where: str, problems: list[str], *, allow_images: bool,
        role: str = "user",
    ) -> None:
        if not isinstance(parts, list) or not parts:
            problems.append(f"{where}.parts must be a non-empty array")
            return
        for j, part in enumerate(parts):
            at = f"{where}.parts[{j}]"
            if not isinstance(part, dict):
                problems.append(f"{at} must be an object")
            elif "text" in part:
                if not isinstance(part["text"], str):
                    problems.append(f"{at}.text must be a string")
                elif not part["text"]:  # proto3 reads "" as unset, as the real API does
                    problems.append(f"* GenerateContentRequest.{at}.data: required oneof field "
                                    "'data' must have one initialized field")
            elif "inline_data" in part or "inlineData" in part:
                if not allow_images:
                    problems.append(f"{at}: only text is allowed here")
                    continue
                blob = part.get("inline_data") or part.get("inlineData") or {}
                # Gemini reads PNG, JPEG and WebP (and HEIC/HEIF), not GIF.
                check_image_b64(
                    blob.get("data"), blob.get("mime_type", blob.get("mimeType")), at, problems,
                    accepted=("image/png", "image/jpeg", "image/webp"),
                )
            elif "functionCall" in part or "functionResponse" in part:
                kind = "functionCall" if "functionCall" in part else "functionResponse"
                if (kind == "functionCall") != (role == "model") or not allow_images:
                    problems.append(f"{at}: a {kind} part is not allowed in a {role} turn")
                    continue
                inner = part[kind]
                if not isinstance(inner, dict) or not isinstance(inner.get("name"), str):
                    problems.append(f"{at}.{kind}.name: required")
                elif not isinstance(inner.get("args" if kind == "functionCall" else "response",
                                              {}), dict):
                    problems.append(f"{at}.{kind}: args and response must be objects")
            else:
                problems.append(f"{at}: unknown part {sorted(part)}")

    def _view(self, request: web.Request, body: Any) -> RequestView:
        texts: list[str] = []
        images = 0
        system = body.get("systemInstruction") or body.get("system_instruction") or {}
        texts.extend(p["text"] for p in system.get("parts", []))
        for content in body["contents"]:
            for part in content["parts"]:
                if "text" in part:
                    texts.append(part["text"])
                elif "functionResponse" in part:
                    texts.append(str(part["functionResponse"].get("response", {}).get("result")))
                elif "inline_data" in part or "inlineData" in part:
                    images += 1
        config = body.get("generationConfig", {})
        return RequestView(
            model=request.match_info["model_action"].partition(":")[0],
            roles=["assistant" if c["role"] == "model" else "user" for c in body["contents"]],
            texts=texts,
            n_images=images,
            wants_logprobs=bool(config.get("responseLogprobs")),
            top_logprobs=int(config.get("logprobs") or 0),
            body=body,
        )

    def _render(self, view: RequestView, spec: ReplySpec) -> dict:
        parts: list[dict[str, Any]] = [{"text": spec.text}] if spec.text else []
        for n, call in enumerate(spec.tool_calls):
            function = {"name": call["name"], "args": tool_arguments(call)}
            if call.get("id"):
                function["id"] = call["id"]
            # Opaque to the client, which must send it back with the call; on the first
            # call only, as Gemini 3 signs parallel calls.
            parts.append({"functionCall": function,
                          **({"thoughtSignature": f"c2lnLXt{len(self.requests)}"}
                             if n == 0 else {})})
        finish = {"stop": "STOP", "length": "MAX_TOKENS"}.get(
            spec.finish_reason, spec.finish_reason
        )
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": parts},
            "finishReason": finish,
            "index": 0,
        }
        if spec.finish_message:
            candidate["finishMessage"] = spec.finish_message
        if view.wants_logprobs:
            entries = logprobs_for(spec, view.top_logprobs)
            candidate["logprobsResult"] = {
                "topCandidates": [
                    {"candidates": [{"token": t, "logProbability": v} for t, v in alts.items()]}
                    for _, _, alts in entries
                ],
                "chosenCandidates": [{"token": t, "logProbability": lp} for t, lp, _ in entries],
            }
        prompt_tokens = sum(len(t.split()) for t in view.texts) + 258 * view.n_images
        output_tokens = len(spec.text.split())
        thoughts = spec.reasoning_tokens
        return {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": prompt_tokens,
                "candidatesTokenCount": output_tokens,
                "totalTokenCount": prompt_tokens + output_tokens + thoughts,
                # Beside candidatesTokenCount, not part of it; left out when there were none.
                **({"thoughtsTokenCount": thoughts} if thoughts else {}),
                # Part of promptTokenCount; Gemini leaves the field out when nothing was cached.
                **({"cachedContentTokenCount": min(spec.cached_prompt_tokens, prompt_tokens)}
                   if spec.cached_prompt_tokens else {}),
            },
            "modelVersion": view.model,
        }

    def _bad_key(self) -> web.Response:
        # Gemini rejects a wrong key with 400 INVALID_ARGUMENT, not 401: only the reason in the
        # details says it is the key.
        body = self._error_body(400, "API key not valid. Please pass a valid API key.", "")
        body["error"]["details"] = [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
             "domain": "googleapis.com",
             "metadata": {"service": "generativelanguage.googleapis.com"}},
        ]
        return web.json_response(body, status=400)

    async def _special_fault(self, fault: str, request: web.Request) -> web.StreamResponse | None:
        usage = {"promptTokenCount": 10, "totalTokenCount": 10}
        if fault == "bad_key":
            return self._bad_key()
        if fault == "safety_block":
            return web.json_response(
                {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage}
            )
        if fault in FINISH_FAULTS:
            reason, text = FINISH_FAULTS[fault]
            candidate: dict[str, Any] = {"finishReason": reason, "index": 0}
            if text:
                candidate["content"] = {"role": "model", "parts": [{"text": text}]}
            return web.json_response({"candidates": [candidate], "usageMetadata": usage})
        if fault == "empty_candidates":
            return web.json_response({"candidates": [], "usageMetadata": usage})
        if fault == "429_retry_info":
            # How Google's APIs say when to come back: in the body, not a Retry-After header.
            body = self._error_body(429, "Resource has been exhausted (e.g. check quota).", "")
            body["error"]["details"] = [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                    {"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                     "quotaId": "GenerateRequestsPerMinutePerProjectPerModel"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                 "retryDelay": f"{self.retry_after_s}s"},
            ]
            return web.json_response(body, status=429)
        if fault == "prepay_depleted":
            return web.json_response(self._error_body(
                402, "Your prepayment credits are depleted. Please go to AI Studio at "
                "https://ai.studio/projects to manage your project and billing.", ""), status=402)
        if fault == "429_no_quota":
            metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
            body = self._error_body(429, "You exceeded your current quota, please check your "
                                    f"plan and billing details.\n* Quota exceeded for metric: "
                                    f"{metric}, limit: 0, model: fake\nPlease retry in 21.5s.", "")
            body["error"]["details"] = [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                    {"quotaMetric": metric,
                     "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                     "quotaDimensions": {"location": "global", "model": "fake"},
                     "quotaValue": "0"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "21s"},
            ]
            return web.json_response(body, status=429)
        if fault == "413":  # Google's front end, before the API reads the body
            return web.Response(status=413, content_type="text/html", text=(
                "<!DOCTYPE html><html lang=en><meta charset=utf-8><title>Error 413 (Request "
                "Entity Too Large)!!1</title><p><b>413.</b> <ins>That’s an error.</ins><p>Your "
                "client issued a request that was too large. <ins>That’s all we know.</ins>"))
        if fault == "too_large_400":
            return web.json_response(self._error_body(
                400, "Request payload size exceeds the limit: 20971520 bytes.", ""), status=400)
        return None


if __name__ == "__main__":
    main(FakeGemini)
