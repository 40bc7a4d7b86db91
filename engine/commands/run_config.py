"""The configuration of ``vaot run``: its flags and ``--config`` file merged into a checked
:class:`~engine.config.RunConfig`, and a bad value said as the user wrote it (a file's key and
line, or the flag)."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
from pathlib import Path

import msgspec

from engine.config import ConfigError, ModelConfig, RunConfig, load_toml
from engine.logs import log_path_for

__all__ = ["DEMO_MODELS", "config_from"]

DEMO_MODELS = ("reference:calibrated", "reference:ignore", "reference:overcall", "reference:blind")


# What a config file calls the flags whose names it does not share, and where the per-model
# ones go: said when a file uses the flag's name, rather than only "unknown field".
_CONFIG_NAMES = {
    "timeout": "call_timeout_s", "retry_base_delay": "retry_base_delay_s",
    "model": "models (a list of specs, or [[models]] tables)",
    **{flag: f"{flag} in a [[models]] table (one per model)"
       for flag in ("base_url", "api_key_env", "dialect", "convention", "prompt_cache",
                    "native_tools")},
}


def _check_config_keys(raw: dict, path: str) -> None:
    known = {f.name for f in msgspec.structs.fields(RunConfig)}
    for key in raw:
        if key in known:
            continue
        name = str(key).replace("-", "_")
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = _CONFIG_NAMES.get(name) or (name if name in known else None) or (
            close[0] if close else None)
        if name in ("no_progress", "config", "dry_run"):
            hint = f"the flag --{name.replace('_', '-')} (it has no config key)"
        raise ConfigError(f"--config {path}: unknown option {key!r}"
                          + (f"; use {hint}" if hint else "")
                          + " (see --config in vaot run --help)")


def config_from(args: argparse.Namespace) -> RunConfig:
    """The run's configuration: the ``--config`` file's options, the flags given over them.

    Raises:
        ConfigError: a value is missing, wrong or in the wrong place; said as the user wrote
            it (the flag, or the file's key and line).
    """
    _refuse_empty_values(args)
    raw: dict = load_toml(args.config) if args.config else {}
    if args.config:
        _check_config_keys(raw, args.config)
    in_file = set(raw)  # the options the file sets (a flag given overrides one)
    if isinstance(raw.get("settings"), str):  # written as the flag takes it: "vaot,cot"
        raw["settings"] = [s.strip() for s in raw["settings"].split(",") if s.strip()]
    models = raw.pop("models", None)
    _put_flags(args, raw, in_file)
    _refuse_paths_beside_the_config(args, raw, in_file)
    tables, model_tables = _model_tables(args, models)
    api_tables = [t for t in model_tables if not str(t.get("spec", "")).startswith("reference:")]
    _refuse_api_options_of_reference_agents(args, tables, model_tables, api_tables,
                                            file_temperature=("temperature" in in_file
                                                              and raw.get("temperature")
                                                              is not None))
    _put_model_flags(args, api_tables)
    raw["models"] = model_tables
    config = _converted(args, raw, in_file, tables, model_tables)
    config = _validated(args, config, in_file, tables)
    _refuse_a_log_over_an_input(args, config)
    return config


def _refuse_empty_values(args: argparse.Namespace) -> None:
    """An empty value is an unset shell variable (--base-url "$URL"), not "the default":
    dropped, it would send the run to the provider's own API, or read no config file."""
    for flag in ("config", "base_url", "api_key_env", "dialect"):
        value = getattr(args, flag)
        if value is not None and not value.strip():
            raise ConfigError(f"--{flag.replace('_', '-')}: empty; give a value, or leave the "
                              "flag out")


def _put_flags(args: argparse.Namespace, raw: dict, in_file: set[str]) -> None:
    """The run-wide flags given, over the file's options in ``raw``; what they override is no
    longer ``in_file`` (an error in it is the flag's, not the file's)."""
    flags = {
        "dataset": args.dataset, "store": args.store, "limit": args.limit,
        "concurrency": args.concurrency, "workers": args.workers, "max_steps": args.max_steps,
        "max_tokens": args.max_tokens, "cot_max_tokens": args.cot_max_tokens,
        "token_budget": args.token_budget,
        "max_cost": args.max_cost, "temperature": args.temperature, "seed": args.seed,
        "epochs": args.epochs, "shape": args.shape, "image_history": args.image_history,
        "render_base": args.render_base, "call_timeout_s": args.timeout,
        "run_name": args.run_name, "max_attempts": args.max_attempts,
        "retry_base_delay_s": args.retry_base_delay,
        "retry_failed": args.retry_failed or None,
    }
    raw.update({k: v for k, v in flags.items() if v is not None})
    in_file.difference_update(k for k, v in flags.items() if v is not None)
    if args.settings is not None:
        in_file.discard("settings")
    if args.models or args.base_url or args.api_key_env or args.dialect or args.convention:
        in_file.discard("models")
    if isinstance(raw.get("store"), str) and raw["store"] != ":memory:":
        raw["store"] = os.path.expanduser(raw["store"])  # as the shell would for a flag
    if args.settings is not None:  # "" is a mistake to report, not "all settings"
        raw["settings"] = [s.strip() for s in args.settings.split(",") if s.strip()]


def _refuse_paths_beside_the_config(args: argparse.Namespace, raw: dict,
                                    in_file: set[str]) -> None:
    """Refuse a relative store or dataset path of the config file that is not there from the
    current folder but is beside the file: the paths are read from the current folder, so a
    config run from another folder made a new, empty store there and asked every sample again
    (a paid run paid twice), with no word but "a new run"."""
    if not args.config:
        return
    beside = Path(args.config).expanduser().parent
    for key, flag in (("store", "--store"), ("dataset", "--dataset")):
        value = raw.get(key)
        if key not in in_file or not isinstance(value, str):
            continue
        kind, sep, path = value.strip().partition(":") if key == "dataset" else ("", "", value)
        if key == "dataset" and (not sep or kind not in ("jsonl", "see2think")):
            continue
        if not path or path == ":memory:" or Path(path).expanduser().is_absolute():
            continue
        here, there = Path(path), beside / path
        if here.exists() or not there.exists() or beside.resolve() == Path.cwd().resolve():
            continue
        raise ConfigError(
            f"--config {args.config}: {_where(args.config, key)}: {path!r} is read from the "
            f"current folder ({Path.cwd()}), which has none; the config file's folder has one "
            f"({there}): run from {beside}, or give {flag} "
            + (f"{kind}:{there}" if key == "dataset" else str(there)) + " (or an absolute path "
            "in the file)")


def _refuse_a_log_over_an_input(args: argparse.Namespace, config: RunConfig) -> None:
    """Refuse a store whose log (the store's name with ``.log``, appended to) is the dataset
    or config file: ``--dataset jsonl:data.log --store data`` wrote the run's log lines into
    its own dataset, and the rerun skipped them as bad rows."""
    log_file = log_path_for(config.store)
    if log_file is None or not log_file.is_file():
        return
    kind, _, path = config.dataset.strip().partition(":")
    inputs = [("--config", args.config, args.config)] if args.config else []
    if kind in ("jsonl", "see2think") and path.strip():
        inputs.append(("--dataset", config.dataset.strip(), path.strip()))
    for flag, given, file in inputs:
        with contextlib.suppress(OSError):
            if os.path.samefile(Path(file).expanduser(), log_file):
                raise ConfigError(
                    f"--store {config.store}: the run's log beside it would be {log_file}, "
                    f"which is the {flag} file {given}: its lines would be appended to it; "
                    "give the store another name")


def _model_tables(args: argparse.Namespace, models: object) -> tuple[list[dict], list[dict]]:
    """The file's model tables (a spec alone made a table), and those of the models that run:
    the --model ones, else the file's, else the demo's reference agents."""
    if models is not None and (not isinstance(models, list)
                               or not all(isinstance(m, dict | str) for m in models)):
        shape = "a [models] table" if isinstance(models, dict) else f"{type(models).__name__}"
        if isinstance(models, list):  # an item that is neither: named
            at, item = next((i, m) for i, m in enumerate(models, 1)
                            if not isinstance(m, dict | str))
            raise ConfigError(f"--config {args.config}: item {at} of models is {item!r}, "
                              "neither a spec (\"openai:gpt-4o\") nor a model's table")
        raise ConfigError(f"--config {args.config}: models must be [[models]] tables (one per "
                          f"model) or a list of specs like [\"openai:gpt-4o\"], not {shape}")
    if models == [] and not args.models:  # not "no models given": the demo would run instead
        raise ConfigError(f"--config {args.config}: models is empty; name at least one model "
                          "(models = [\"openai:M\"]), or leave models out for the demo's "
                          "reference agents")
    tables = [m if isinstance(m, dict) else {"spec": m} for m in models or []]
    if args.models:
        # A --model that the config also describes keeps the config's table (its base_url,
        # limits, dialect …): the flag picks which models run, not how they are reached.
        by_spec = {t.get("spec"): t for t in tables}
        model_tables = [dict(by_spec.get(spec, {"spec": spec})) for spec in args.models]
    elif tables:
        model_tables = tables
    else:
        model_tables = [{"spec": spec} for spec in DEMO_MODELS]
    return tables, model_tables


def _refuse_api_options_of_reference_agents(args: argparse.Namespace, tables: list[dict],
                                            model_tables: list[dict],
                                            api_tables: list[dict], *,
                                            file_temperature: bool = False) -> None:
    """Refuse an option of the models called through an API given for the reference agents,
    as a flag when no other model runs, or in a reference agent's table; ``file_temperature``:
    the config file sets ``temperature`` (no flag over it)."""
    if not api_tables and file_temperature:
        # As the flag is: taken from the file, it started another run of the same replies.
        raise ConfigError(f"--config {args.config}: temperature: only models called through an "
                          "API use it, and this run has none (the reference agents run "
                          "in-process); name one in models, or leave temperature out")
    if not api_tables:
        # The reference agents run in-process and write their own format: these flags would
        # be dropped without a word (a forgotten --model), or break the control (a dialect).
        # --temperature too: they draw no samples, yet it is part of the run, so it started
        # another run that computed the same replies again.
        given = [flag for flag, value in (("--base-url", args.base_url),
                                          ("--api-key-env", args.api_key_env),
                                          ("--dialect", args.dialect),
                                          ("--convention", args.convention),
                                          ("--temperature", args.temperature is not None))
                 if value]
        if given:
            raise ConfigError(f"{', '.join(given)}: only models called through an API use "
                              f"{'it' if len(given) == 1 else 'them'}, and this run has none "
                              "(the reference agents run in-process); name one with --model")
    for table in model_tables:
        spec = str(table.get("spec", ""))
        # The reference agents write their own format: a reading set for them in a table would
        # break the control (boxes read the wrong way round), and an endpoint would be ignored.
        ignored = [key for key in _API_ONLY_KEYS if key in table] if spec.startswith(
            "reference:") else []
        if ignored:
            number = None if args.models else model_tables.index(table) + 1
            place = _where_model(args.config, tables, spec, ignored[0], number) if (
                args.config) else None
            raise ConfigError(f"--config {args.config}: {place or 'models'}: "
                              f"{', '.join(ignored)}: only models called through an API use "
                              f"{'it' if len(ignored) == 1 else 'them'}; the reference agents "
                              "run in-process and write their own format")


def _put_model_flags(args: argparse.Namespace, api_tables: list[dict]) -> None:
    """The per-model flags given, into the tables of the models called through an API (over
    what the file says); one that no model of the run can take is refused, not ignored."""
    for table in api_tables:  # a flag given overrides what the config says
        if args.base_url:
            table["base_url"] = args.base_url
        if args.api_key_env:
            table["api_key_env"] = args.api_key_env
        if args.convention:
            table["convention"] = args.convention
        if args.dialect:
            table["dialect"] = args.dialect
    if args.prompt_cache:
        anthropic = [t for t in api_tables if str(t.get("spec", "")).startswith("anthropic:")]
        if not anthropic:
            # Said, not ignored: the flag would otherwise read as "caching is on".
            why = ("OpenAI and Gemini cache long prompts on their own" if api_tables
                   else "the reference agents run in-process; name one with --model")
            raise ConfigError("--prompt-cache: only anthropic models are asked to cache, and "
                              f"this run has none ({why})")
        for table in anthropic:
            table["prompt_cache"] = True
    if getattr(args, "native_tools", False):
        if not api_tables:
            raise ConfigError("--native-tools: only models called through an API are sent tool "
                              "declarations, and this run has none (the reference agents run "
                              "in-process); name one with --model")
        for table in api_tables:  # a model that cannot use them is refused when validated
            table["native_tools"] = True


def _converted(args: argparse.Namespace, raw: dict, in_file: set[str], tables: list[dict],
               model_tables: list[dict]) -> RunConfig:
    """``raw`` as a RunConfig, a wrong type or unknown key said where it was written (the
    file's key and line, or a [[models]] table) rather than as msgspec's path."""
    try:
        return msgspec.convert(raw, RunConfig)
    except msgspec.ValidationError as exc:
        what = str(exc).split(" - at ")[0]
        table = re.search(r"at `\$\.models\[(\d+)\](?:\.(\w+))?", str(exc))
        if args.config and table:
            # A wrong type or an unknown key in a [[models]] table: the flags set neither, so
            # it is the file's, even when --model picked the table.
            unknown = re.search(r"unknown field `([^`]*)`", what)
            field = table.group(2) or (unknown.group(1) if unknown else None)
            spec = model_tables[int(table.group(1))].get("spec")
            # Without --model the run's tables are the file's, in its order (a spec given
            # twice is refused later, but this error comes first).
            number = None if args.models else int(table.group(1)) + 1
            place = _where_model(args.config, tables, spec, field, number)
            if place and unknown:
                known = [f.name for f in msgspec.structs.fields(ModelConfig)]
                close = difflib.get_close_matches(unknown.group(1), known, n=1)
                what += f"; did you mean {close[0]}?" if close else (
                    f" (a [[models]] table takes {', '.join(known)})")
            if place:
                raise ConfigError(f"--config {args.config}: {place}: {what}") from None
        key = re.search(r"at `\$\.(\w+)", str(exc))
        if args.config and key and key.group(1) in in_file:
            raise ConfigError(f"--config {args.config}: {_where(args.config, key.group(1))}: "
                              f"{what}") from None
        where = f" in {args.config}" if args.config else ""
        raise ConfigError(f"bad configuration{where}: {exc}") from None


def _validated(args: argparse.Namespace, config: RunConfig, in_file: set[str],
               tables: list[dict]) -> RunConfig:
    """``config`` as :meth:`RunConfig.validate` checks it, its error said where the value
    was written."""
    try:
        return config.validate()
    except ConfigError as exc:
        # Said as the user wrote it: a value from the file by its key (and line), not as a
        # flag they never typed.
        key, rest = _config_key_of(str(exc))
        flagged = {"base_url": args.base_url, "api_key_env": args.api_key_env,
                   "dialect": args.dialect, "convention": args.convention}.get(exc.field or "")
        place = _where_model(args.config, tables, exc.model, exc.field) if (
            args.config and exc.model is not None and not flagged) else None
        if place:  # a value of a [[models]] table, even one --model picked; it names the model
            raise ConfigError(f"--config {args.config}: {place}: "
                              f"{rest.removeprefix(f'model {exc.model}: ')}") from None
        if args.config and key in in_file:
            raise ConfigError(f"--config {args.config}: {_where(args.config, key)}: {rest}"
                              ) from None
        raise


_API_ONLY_KEYS = ("base_url", "api_key_env", "dialect", "convention", "max_tokens_field",
                  "detail", "extra", "prompt_cache", "native_tools")


def _config_key_of(message: str) -> tuple[str | None, str]:
    """The config key a validation message is about, and the rest of the message:
    "--max-steps: must be …" → ("max_steps", "must be …"); "model M: …" → ("models", …)."""
    head, sep, rest = message.partition(": ")
    if not sep:
        return None, message
    if head.startswith("--"):
        name = head[2:].replace("-", "_")
        return {"timeout": "call_timeout_s", "retry_base_delay": "retry_base_delay_s",
                "model": "models"}.get(name, name), rest
    if head in ("prices",):
        return head, rest
    if head.startswith("model "):
        return "models", message
    return None, message


def _where(path: str, key: str) -> str:
    """``key``, with the line of the file that sets it when one plainly does."""
    with contextlib.suppress(OSError, UnicodeError):
        text = Path(path).read_bytes().decode("utf-8-sig", "replace")
        table = "[[models]]" if key == "models" else None
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith(table or "\0") or re.match(
                    rf'["\']?{re.escape(key)}["\']?\s*=', stripped):
                return f"{key} (line {number})"
    return key


_MODELS_HEADER = re.compile(r"\s*\[\[\s*models\s*\]\]\s*(?:#.*)?$")
# A table header: a name of bare or quoted keys, nothing after but a comment. An array value
# continued on the next line ("  [50256, -100],") has a comma or a number in it, not a name.
_HEADER = re.compile(r"""\s*\[\[?\s*[A-Za-z_"'][\w.\-"' ]*\]\]?\s*(?:#.*)?$""")


def _where_model(path: str, tables: list[dict], spec: object, field: str | None,
                 number: int | None = None) -> str | None:
    """Which ``[[models]]`` table of the file describes ``spec`` (the ``number``-th, when
    known), and the line of its ``field`` (or of the table's header), as "[[models]] 2
    (openai:b), convention (line 9)"; None when the file names the model in a list of specs
    rather than a table."""
    if number is None:
        number = next((i for i, t in enumerate(tables, 1) if t.get("spec") == spec), None)
    if number is None:
        return None
    with contextlib.suppress(OSError, UnicodeError):
        text = Path(path).read_bytes().decode("utf-8-sig", "replace").splitlines()
        headers = [i for i, line in enumerate(text) if _MODELS_HEADER.match(line)]
        if len(headers) != len(tables):  # a list of specs, or a layout this does not read
            return None
        start = headers[number - 1]
        line = None
        for i in range(start + 1, len(text)):
            stripped = text[i].strip()
            if _HEADER.match(stripped):  # the next table
                break
            if field and re.match(rf'["\']?{re.escape(field)}["\']?\s*=', stripped):
                line = i
                break
        where = f"(line {line + 1})" if line is not None else f"(the table at line {start + 1})"
        # A table without its spec (the field missing) is named by its number alone.
        named = f" ({spec})" if isinstance(spec, str) else ""
        return f"[[models]] {number}{named}" + (f", {field} " if field else " ") + where
    return None
