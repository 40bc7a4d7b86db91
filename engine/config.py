"""The run configuration: from flags or a TOML file, validated with messages that name the input."""

from __future__ import annotations

import math
import re
import tomllib
import urllib.parse
from pathlib import Path
from typing import Any

import msgspec

from engine.prompts import SETTINGS

__all__ = ["DEFAULT_STORE", "ConfigError", "ModelConfig", "RunConfig", "load_toml"]

DEFAULT_STORE = "runs/demo.lmdb"
"""Where a run is recorded when no --store is given (the embedded demo's store)."""


class ConfigError(ValueError):
    """A bad configuration value; the message names it and says what is expected.

    ``model`` and ``field`` say which model's which option it is about, when it is one: the CLI
    points at that line of a config file's ``[[models]]`` table."""

    def __init__(self, message: str, *, model: str | None = None, field: str | None = None
                 ) -> None:
        super().__init__(message)
        self.model = model
        self.field = field


class ModelConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    spec: str
    """``provider:model`` — ``reference:calibrated``, ``openai:gpt-4o`` …"""
    base_url: str | None = None
    api_key_env: str | None = None
    dialect: str = "vaot"
    convention: str = "xyxy"
    """Order of box coordinates the model writes: ``xyxy`` (default) or ``yxyx``."""
    max_tokens_field: str | None = None
    """OpenAI only: ``max_tokens`` or ``max_completion_tokens`` (default: the latter on OpenAI's
    API, the former on other servers)."""
    detail: str | None = None
    """OpenAI only: the image detail the API is asked for (``low``, ``high``, ``auto``)."""
    max_concurrency: int | None = None
    prompt_cache: bool = False
    """Anthropic only: ask the API to cache each request's repeated prefix (reads are billed
    at about a tenth of the input rate, writes at 1.25 times it; engine/cost.py)."""
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    extra: dict[str, Any] = {}
    native_tools: bool = False
    """Declare the visual_action tool in each request and ask the model to call it (function
    calling; the ``openai`` dialect, which reads native calls). Part of the run's identity:
    the requests, and so their hashes, carry the declaration."""


class RunConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    models: tuple[ModelConfig, ...] = (ModelConfig("reference:calibrated"),)
    dataset: str = "synthetic"
    settings: tuple[str, ...] = SETTINGS
    store: str = DEFAULT_STORE
    limit: int | None = None
    concurrency: int = 64
    workers: int = 1
    """Processes the run is spread over (see engine/workers.py); not part of the run's identity."""
    max_steps: int = 10
    max_tokens: int = 2048
    cot_max_tokens: int | None = None
    """Output tokens of the ``cot`` setting's one call, which writes the whole solution; none:
    ``max_tokens``, as one step of the other settings gets (which make up to ``max_steps``
    calls of it)."""
    token_budget: int | None = None
    """Tokens (input + output, as the API reports them) one trajectory may spend: once its
    recorded steps reach it, it asks nothing more and ends as ``max_steps``. The call that
    crosses it is kept: a reply's size is known only once it is paid for."""
    temperature: float | None = None
    seed: int = 0
    epochs: int = 1
    shape: str = "see2think"
    image_history: str = "all"
    render_base: str = "current"
    call_timeout_s: float = 300.0
    max_attempts: int = 6
    retry_base_delay_s: float = 1.0
    """First backoff after a transient fault (doubles each attempt; a Retry-After wins)."""
    prices: dict[str, Any] = {}
    """``{"openai:gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}}`` (model spec or
    glob → price per million tokens); turns usage into a cost line in the summary."""
    max_cost: float | None = None
    """What the replies of the command's trajectories may cost, at ``prices``: a model call
    starts only if its expected cost still fits (engine/spend.py); not part of the run's
    identity: raise it and rerun to go on."""
    run_name: str | None = None
    retry_failed: bool = False
    """Run again the trajectories an earlier invocation ended as failed (not part of the run's
    identity: the failure stays in the log and the retry continues after it)."""

    def validate(self) -> RunConfig:
        if self.store != ":memory:" and Path(self.store).name in ("", ".", ".."):
            raise ConfigError(f"--store: {self.store!r} names no store; give a path such as "
                              "runs/demo.lmdb")
        for setting in self.settings:
            if setting not in SETTINGS:
                raise ConfigError(
                    f"--settings: unknown setting {setting!r} (choose from {', '.join(SETTINGS)})"
                )
        if not self.settings:
            raise ConfigError("--settings: at least one setting is needed")
        if self.cot_max_tokens is not None and "cot" not in self.settings:
            # Part of the run's identity while no call used it: rerun with it, a run went on
            # as another run and asked every trajectory again.
            raise ConfigError("--cot-max-tokens: only the cot setting uses it, and --settings "
                              f"({','.join(self.settings)}) has no cot; leave it out")
        # A trajectory's id comes from (run, model, sample, setting, epoch): a repeated setting
        # or model would drive the same trajectory twice at once.
        for flag, names in (("--settings", self.settings),
                            ("--model", [m.spec for m in self.models])):
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ConfigError(f"{flag}: {', '.join(map(repr, repeated))} given more than "
                                  "once (for repeated draws of the same trajectories use --epochs)")
        # Upper bounds too: a value no run could use (a typo'd extra digit) fails here in one
        # line, not as an overflow deep in the run or a job list that never finishes building.
        for name, value, low, high in (
            ("--concurrency", self.concurrency, 1, 100_000), ("--workers", self.workers, 1, 256),
            ("--max-steps", self.max_steps, 1, 10_000), ("--epochs", self.epochs, 1, 10_000),
            ("--max-tokens", self.max_tokens, 1, 10_000_000),
            ("--max-attempts", self.max_attempts, 1, 1_000), ("--seed", self.seed, -(2**63), 2**63 - 1),
        ):
            if not low <= value <= high:
                raise ConfigError(f"{name}: must be from {low:,} to {high:,}, got {value}")
        for name, number, low, high in (
            ("--timeout", self.call_timeout_s, 0.0, 86_400.0),
            ("--retry-base-delay", self.retry_base_delay_s, 0.0, 3_600.0),
            ("--temperature", self.temperature, 0.0, 100.0),
        ):
            if number is None:
                continue
            if not math.isfinite(number) or not low <= number <= high or (
                    name == "--timeout" and number == 0):
                bound = f"above {low:g}" if name == "--timeout" else f"from {low:g}"
                raise ConfigError(f"{name}: must be a number {bound} up to {high:g}, got {number}")
        if self.run_name is not None and not self.run_name.strip():
            raise ConfigError("--run-name: an empty name names no run; give one, or leave it "
                              "out to key the run by its options")
        if self.workers > 1 and self.store == ":memory:":
            raise ConfigError("--workers: an in-memory store cannot be shared by several "
                              "processes; give --store a path")
        if self.cot_max_tokens is not None and not 1 <= self.cot_max_tokens <= 10_000_000:
            raise ConfigError(f"--cot-max-tokens: must be from 1 to 10,000,000, "
                              f"got {self.cot_max_tokens}")
        if self.token_budget is not None and not 1 <= self.token_budget <= 10**12:
            raise ConfigError(f"--token-budget: must be from 1 to 1,000,000,000,000, "
                              f"got {self.token_budget}")
        if self.limit is not None and not 1 <= self.limit <= 10**9:
            raise ConfigError(f"--limit: must be from 1 to 1,000,000,000, got {self.limit}")
        if self.shape not in ("see2think", "chat"):
            raise ConfigError(f"--shape: {self.shape!r} is not 'see2think' or 'chat'")
        if self.render_base not in ("current", "original"):
            raise ConfigError(f"--render-base: {self.render_base!r} is not 'current' or 'original'")
        from engine.conversation import parse_image_history

        try:
            parse_image_history(self.image_history)
        except ValueError as exc:
            raise ConfigError(f"--image-history: {exc}") from None
        for model in self.models:
            _validate_model(model)
            _validate_temperature(model, self.temperature)
            _validate_anthropic_thinking(model, self)
        if self.prices:
            from engine.cost import PriceTable

            try:
                PriceTable.from_config(self.prices)
            except msgspec.ValidationError as exc:
                raise ConfigError(
                    f"prices: {exc}; each model's price is a table, e.g. [prices.\"openai:gpt-4o\"] "
                    "with input_per_mtok and output_per_mtok (per million tokens)") from None
        if self.max_cost is not None:
            self._validate_max_cost()
        return self

    def _validate_max_cost(self) -> None:
        from engine.cost import PriceTable
        from engine.spend import unpriced_models

        if not math.isfinite(self.max_cost) or self.max_cost <= 0:
            raise ConfigError(f"--max-cost: must be a number above 0, got {self.max_cost}")
        unpriced = unpriced_models([m.spec for m in self.models], PriceTable.from_config(self.prices))
        if unpriced:
            raise ConfigError(
                f"--max-cost: no price for {', '.join(unpriced)}, so what its replies cost cannot "
                "be counted; give each model a price in the config file's prices table, e.g. "
                f"[prices.\"{unpriced[0]}\"] with input_per_mtok and output_per_mtok (0 for a "
                "local server)")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USERINFO = re.compile(r"(//)[^/?#]*@")


def _without_userinfo(text: str) -> str:
    """``text`` with any ``user:password@`` of a URL in it shown as ``…@``."""
    return _USERINFO.sub(r"\1…@", text)
# The providers whose adapters declare tools and replay calls (a cassette replays a run of
# theirs by request hash, declarations included).
_NATIVE_TOOL_PROVIDERS = ("openai", "anthropic", "gemini", "cassette")

_ENDPOINT_PATHS = {"openai": "/chat/completions", "anthropic": "/messages"}
"""The path each API's adapter adds to its base URL."""

_CONVERSATION_FIELDS = {"openai": ("messages",), "anthropic": ("messages",),
                        "gemini": ("contents",)}
"""The request body's field that carries the conversation, per API: ``extra`` may not set it."""

_MODEL = ("the model its spec names", "name the model in the spec")
_TEMPERATURE = ("the run's temperature", "give --temperature (temperature in a config file)")
_RECORDED_FIELDS = {
    "openai": {"model": _MODEL, "temperature": _TEMPERATURE},
    "anthropic": {"model": _MODEL, "temperature": _TEMPERATURE},
    "gemini": {"temperature": _TEMPERATURE},  # in generationConfig; the model is in the URL
}
"""Fields of the request body ``extra`` may not set, per API (Gemini's: in generationConfig):
the model and temperature vaot sends from the spec and flags, and records."""


def _validate_model(model: ModelConfig) -> None:
    """What can be checked before the first call: the run fails here, in one line, rather than
    once per trajectory (a dialect) or after minutes of retries (a URL no server can have)."""
    from engine.parsing.dialects import DIALECTS

    where = f"model {model.spec}"
    if "," in model.spec:
        # Not a list (--settings is): one model named "a,openai:b" would be asked for.
        raise ConfigError(f"--model: {model.spec!r} holds a comma; give --model once per model",
                          model=model.spec, field="spec")
    if model.convention not in ("xyxy", "yxyx"):
        raise ConfigError(f"{where}: convention {model.convention!r} is not 'xyxy' or 'yxyx'",
                          model=model.spec, field="convention")
    if model.dialect not in DIALECTS:
        raise ConfigError(f"{where}: unknown dialect {model.dialect!r} "
                          f"(known: {', '.join(DIALECTS)})", model=model.spec, field="dialect")
    if model.convention == "yxyx" and not getattr(DIALECTS[model.dialect], "READS_CONVENTION",
                                                  True):
        # Its parser reads boxes x first whatever the convention: the option would change the
        # run's record and nothing of what is drawn.
        raise ConfigError(f"{where}: convention 'yxyx' has no effect with the {model.dialect} "
                          "dialect, whose boxes are always x first; leave it out",
                          model=model.spec, field="convention")
    if model.api_key_env is not None and not _ENV_NAME.fullmatch(model.api_key_env):
        # Never echo it: what was given may be the key itself.
        raise ConfigError(f"{where}: --api-key-env takes the NAME of an environment variable "
                          "that holds the key (letters, digits, _), not the key itself",
                          model=model.spec, field="api_key_env")
    if model.base_url is not None:
        try:
            url = urllib.parse.urlsplit(model.base_url)
            url.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError as exc:
            raise ConfigError(f"{where}: base URL {_without_userinfo(model.base_url)!r} is not "
                              f"a URL ({_without_userinfo(str(exc))})",
                              model=model.spec, field="base_url") from None
        if "@" in url.netloc:
            # Never echo it: the password is a secret, and the base URL is part of the run's
            # header (the store, `export`, --dry-run), which keeps it for good.
            raise ConfigError(f"{where}: base URL {_without_userinfo(model.base_url)!r} holds a "
                              "user name or password (user:password@host), which the run's "
                              "header would record; give the URL without them, and the key in "
                              "the variable --api-key-env names", model=model.spec,
                              field="base_url")
        if url.query or url.fragment or model.base_url.rstrip().endswith(("?", "#")):
            # Never echo it: a query is where a key is put (Gemini's ?key=), and the base URL
            # is part of the run's header. The endpoint's path would follow the query anyway.
            shown = urllib.parse.urlunsplit(url._replace(query="", fragment=""))
            raise ConfigError(f"{where}: base URL {_without_userinfo(shown)!r} is followed by a "
                              "query or fragment (?… or #…), which the run's header would "
                              "record and vaot's endpoint path would follow; give the URL "
                              "without it, and the key in the variable --api-key-env names",
                              model=model.spec, field="base_url")
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ConfigError(f"{where}: base URL {model.base_url!r} is not an http(s) URL "
                              "with a host, like http://127.0.0.1:8000/v1",
                              model=model.spec, field="base_url")
        endpoint = _ENDPOINT_PATHS.get(_served_by(model.spec))
        path = url.path.rstrip("/")
        if endpoint and path.endswith(endpoint):
            # The adapter adds it: a URL copied from a curl example was asked at
            # .../chat/completions/chat/completions, and the model stopped as "not found".
            base = urllib.parse.urlunsplit(url._replace(path=path.removesuffix(endpoint)))
            raise ConfigError(f"{where}: base URL {model.base_url!r} ends with the endpoint "
                              f"{endpoint}, which vaot adds to it; give {base!r}",
                              model=model.spec, field="base_url")
    if model.max_tokens_field not in (None, "max_tokens", "max_completion_tokens"):
        raise ConfigError(f"{where}: max_tokens_field {model.max_tokens_field!r} is not "
                          "'max_tokens' or 'max_completion_tokens'",
                          model=model.spec, field="max_tokens_field")
    if model.prompt_cache and _served_by(model.spec) != "anthropic":
        raise ConfigError(f"{where}: prompt_cache is for anthropic models, which cache only what "
                          "they are asked to; OpenAI and Gemini cache long prompts on their own",
                          model=model.spec, field="prompt_cache")
    if model.native_tools:
        provider = model.spec.partition(":")[0]
        if provider not in _NATIVE_TOOL_PROVIDERS:
            raise ConfigError(f"{where}: native_tools is for models called through an API "
                              f"({', '.join(_NATIVE_TOOL_PROVIDERS)}); {provider} models write "
                              "their actions in text", model=model.spec, field="native_tools")
        if model.dialect != "openai":
            raise ConfigError(f"{where}: native_tools needs the openai dialect, which reads "
                              f"native tool calls (this model's is {model.dialect!r}); add "
                              "--dialect openai (in a config file: dialect = \"openai\" in its "
                              "[[models]] table)", model=model.spec, field="native_tools")
        if "tools" in model.extra:  # merged last into the body, it would replace the declaration
            raise ConfigError(f"{where}: extra sets 'tools', which would replace the "
                              "visual_action tool native_tools declares; leave it out (extra "
                              "may still set tool_choice or toolConfig)",
                              model=model.spec, field="extra")
    provider = _served_by(model.spec)
    replaced = [key for key in _CONVERSATION_FIELDS.get(provider, ()) if key in model.extra]
    if replaced:
        # Merged last into the body, it would replace the question, the image and every step
        # vaot sends: the model would answer something else, and the run would measure nothing.
        raise ConfigError(f"{where}: extra sets {replaced[0]!r}, which would replace the "
                          "conversation vaot sends (the question, the images and the steps so "
                          "far); leave it out (extra is for fields beside it)",
                          model=model.spec, field="extra")
    said = _RECORDED_FIELDS.get(provider, {})
    sampling = model.extra.get("generationConfig") if provider == "gemini" else model.extra
    clash = next((key for key in said if isinstance(sampling, dict) and key in sampling), None)
    if clash:
        # Merged last into the body, it was sent in place of the model or temperature the run
        # records and reports: results credited to a model, or a setting, never asked.
        name = f"generationConfig.{clash}" if provider == "gemini" else clash
        what, instead = said[clash]
        raise ConfigError(f"{where}: extra sets {name!r}, which would be sent in place of "
                          f"{what}, which the run records and reports; {instead}",
                          model=model.spec, field="extra")
    for field in ("detail", "max_tokens_field"):
        if getattr(model, field) is not None and provider != "openai":
            # Said, not ignored: only the OpenAI adapter sends them, and "detail = low" on
            # another model would read as images sent at low resolution.
            raise ConfigError(f"{where}: {field} is for openai models (the Chat Completions "
                              f"API's own field); the {provider} adapter has no such option, "
                              "leave it out", model=model.spec, field=field)
    if model.detail not in (None, "low", "high", "auto"):
        raise ConfigError(f"{where}: detail {model.detail!r} is not 'low', 'high' or 'auto'",
                          model=model.spec, field="detail")
    # Upper bounds as for the flags: a typo'd extra digit fails here, not as an overflow when
    # the run header is written (after the store was made).
    if model.max_concurrency is not None and not 1 <= model.max_concurrency <= 100_000:
        raise ConfigError(f"{where}: max_concurrency must be from 1 to 100,000, "
                          f"got {model.max_concurrency}", model=model.spec, field="max_concurrency")
    for name, low in (("requests_per_minute", 0.001), ("tokens_per_minute", 1.0)):
        rate = getattr(model, name)
        # A floor too: 1e-300 per minute is positive, and a run waiting for its first call for
        # longer than the universe has existed, saying nothing.
        if rate is not None and not (math.isfinite(rate) and low <= rate <= 1e12):
            raise ConfigError(f"{where}: {name} must be a number from {low:g} to 1e12, "
                              f"got {rate}", model=model.spec, field=name)
    try:
        msgspec.msgpack.encode(model.extra)  # as the run header records it
    except (OverflowError, msgspec.EncodeError, TypeError) as exc:
        raise ConfigError(f"{where}: extra cannot be recorded in the run header ({exc})",
                          model=model.spec, field="extra") from None


_TEMPERATURE_MAX = {"anthropic": 1.0, "gemini": 2.0, "openai": 2.0}
"""The highest temperature each provider's own API takes (a server at another base URL that
speaks the same protocol sets its own range, so only the provider's own API is held to it)."""


def _served_by(spec: str) -> str:
    """The provider whose API a model's requests are built for: for a cassette, the recorded
    model's (cassette:openai:gpt-4o records and replays OpenAI requests, detail and all)."""
    provider, _, rest = spec.partition(":")
    while provider == "cassette" and rest:
        provider, _, rest = rest.partition(":")
    return provider


def _at_providers_own_api(model: ModelConfig) -> bool:
    """Whether the model's requests go to its provider's own API, whose documented limits
    apply: no --base-url, or one its adapter knows as the provider's (OpenAI's regional hosts,
    the default URL written out), not some other server speaking the format."""
    if model.base_url is None:
        return True
    provider = _served_by(model.spec)
    if provider == "openai":
        from adapters.models.openai import OpenAIAdapter as adapter
    elif provider == "gemini":
        from adapters.models.gemini import GeminiAdapter as adapter
    elif provider == "anthropic":
        from adapters.models.anthropic import AnthropicAdapter as adapter
    else:
        return False
    return adapter.providers_own(model.base_url.strip().rstrip("/"))


def _validate_temperature(model: ModelConfig, temperature: float | None) -> None:
    provider = _served_by(model.spec)
    high = _TEMPERATURE_MAX.get(provider) if _at_providers_own_api(model) else None
    if temperature is not None and high is not None and temperature > high:
        raise ConfigError(f"--temperature: {temperature:g} is above {high:g}, the most "
                          f"{provider}'s API takes (model {model.spec})")


def _validate_anthropic_thinking(model: ModelConfig, config: RunConfig) -> None:
    """Anthropic's API refuses, with a 400 on every call, thinking (``extra.thinking``) beside a
    temperature, a budget under 1,024 tokens or not under the request's ``max_tokens``, and a
    forced tool choice: said before a run starts, naming the option to change."""
    thinking = model.extra.get("thinking")
    if (_served_by(model.spec) != "anthropic" or not _at_providers_own_api(model)
            or not isinstance(thinking, dict)
            or thinking.get("type") not in ("enabled", "adaptive")):
        return
    where = f"model {model.spec}: extra.thinking"
    if config.temperature is not None and config.temperature != 1:
        raise ConfigError(f"{where} is on, and Anthropic's API takes no --temperature with "
                          f"thinking ({config.temperature:g} given); leave --temperature out",
                          model=model.spec, field="extra")
    choice = model.extra.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        raise ConfigError(f"{where} is on, and Anthropic's API takes no forced tool_choice "
                          f"({choice.get('type')!r}) with thinking; use 'auto' or leave it out",
                          model=model.spec, field="extra")
    if thinking.get("type") != "enabled":
        return
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1024:
        raise ConfigError(f"{where}.budget_tokens must be a whole number of at least 1024 "
                          f"(Anthropic's floor), got {budget!r}", model=model.spec, field="extra")
    caps = [("--max-tokens", config.max_tokens)]
    if "cot" in config.settings and config.cot_max_tokens is not None:
        caps.append(("--cot-max-tokens", config.cot_max_tokens))
    for flag, cap in caps:
        if budget >= cap:
            # Thinking tokens are output tokens: the budget is part of max_tokens, not beside it.
            raise ConfigError(f"{where}.budget_tokens ({budget}) must be under {flag} ({cap}), "
                              "which counts the thinking too; raise "
                              f"{flag} above {budget} plus room for the step's text",
                              model=model.spec, field="extra")


def load_toml(path: str | Path) -> dict[str, Any]:
    """The raw table of a TOML config file (validated later by :class:`RunConfig`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read ({exc.strerror})") from None
    # Editors on Windows save with a byte-order mark, or as UTF-16: read both rather than fail.
    encoding = "utf-16" if data.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--config {path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {path}: not valid TOML ({exc})") from None
