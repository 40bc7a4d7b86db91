"""What a record says a trajectory did: actions proposed, actions executed, images shown.

Real runs of the engine with scripted models: one that looks and then answers, one that writes
its action and its answer in the same reply (the engine never executes that action), and one
that acts at every step until the step budget ends (its last render is never shown).
"""

from __future__ import annotations

import asyncio

import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.scripted import BUILTIN_SCRIPT, Script, ScriptedAdapter
from analysis.records import project
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from store import MemoryStore

ZOOM = (
    "Step {n} (Text): The detail is small; I zoom on the centre.\n"
    "Step {n} (Action Description):\n```json\n"
    '{{"step": {n}, "visual_rationale": "enlarge the centre", '
    '"action": [{{"type": "zoom", "target": [250, 250, 750, 750]}}]}}\n```'
)
ONE_REPLY = (
    ZOOM.format(n=1) + "\nStep 2 (Text): The zoom would show it.\nFinal Answer: {first_option}"
)
SCRIPTS = {
    "looks": BUILTIN_SCRIPT,
    "one_reply": Script(steps=[ONE_REPLY], cot=ONE_REPLY),
    "always_acts": Script(steps=[ZOOM.format(n=n) for n in (1, 2, 3)], cot=ZOOM.format(n=1)),
}
MAX_STEPS = 3
# (actions proposed, actions executed, images shown) per model and setting.
EXPECTED = {
    ("looks", "cot"): (0, 0, 0),
    ("looks", "no_render"): (1, 0, 0),
    ("looks", "vaot"): (1, 1, 1),
    ("looks", "wrong_render"): (1, 1, 1),
    ("one_reply", "cot"): (0, 0, 0),
    ("one_reply", "no_render"): (1, 0, 0),
    ("one_reply", "vaot"): (1, 0, 0),
    ("one_reply", "wrong_render"): (1, 0, 0),
    ("always_acts", "cot"): (0, 0, 0),
    ("always_acts", "no_render"): (MAX_STEPS, 0, 0),
    ("always_acts", "vaot"): (MAX_STEPS, MAX_STEPS, MAX_STEPS - 1),
    ("always_acts", "wrong_render"): (MAX_STEPS, MAX_STEPS, MAX_STEPS - 1),
}


@pytest.fixture(scope="module")
def records():
    config = RunConfig(
        models=tuple(ModelConfig(f"scripted:{name}") for name in SCRIPTS),
        dataset="synthetic:1", limit=2, max_steps=MAX_STEPS,
        settings=("cot", "no_render", "vaot", "wrong_render"),
    )
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    store = MemoryStore()
    adapters = {f"scripted:{name}": ScriptedAdapter(name, s) for name, s in SCRIPTS.items()}
    asyncio.run(run_jobs(config, store, samples, adapters=adapters))
    return list(project(store.iter_events()).values())


def test_actions_proposed_executed_and_images_shown_are_told_apart(records) -> None:
    seen = {}
    for r in records:
        key = (r.model.removeprefix("scripted:"), r.setting)
        seen.setdefault(key, set()).add((r.actions, r.actions_executed, r.images_shown))
    assert seen == {key: {counts} for key, counts in EXPECTED.items()}


def test_an_action_given_with_the_answer_is_not_counted_as_seen(records) -> None:
    # The QA case: a one-reply wrong_render trajectory is answered (and may be scored right)
    # without the model ever being shown the corrupted render.
    one_reply = [r for r in records if r.model == "scripted:one_reply"
                 and r.setting in ("vaot", "wrong_render")]
    assert one_reply and all(r.status == "answered" for r in one_reply)
    assert all(r.actions == 1 and r.images_shown == 0 for r in one_reply)
    exposed = [r for r in records if r.setting == "wrong_render" and r.images_shown]
    assert {r.model for r in exposed} == {"scripted:looks", "scripted:always_acts"}


def test_no_render_is_shown_when_the_image_history_omits_every_returned_image() -> None:
    # original+last:0: each later request says "(The image returned after Step n is omitted.)"
    config = RunConfig(models=(ModelConfig("scripted:always_acts"),), dataset="synthetic:1",
                       limit=2, max_steps=MAX_STEPS, settings=("vaot", "wrong_render"),
                       image_history="original+last:0")
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    store = MemoryStore()
    adapter = ScriptedAdapter("always_acts", SCRIPTS["always_acts"])
    asyncio.run(run_jobs(config, store, samples, adapters={"scripted:always_acts": adapter}))
    records = list(project(store.iter_events()).values())
    assert records and all(r.actions_executed == MAX_STEPS for r in records)
    assert all(r.images_shown == 0 for r in records)


def test_a_reply_concluding_the_answer_is_is_answered_and_scored_as_a_final_answer() -> None:
    # "Therefore, the answer is B." with no "Final Answer:" marker: the trajectory ran on to its
    # step budget and was scored as having no answer. Now it ends, scored as the marker's would.
    concludes = Script(
        steps=[ZOOM.format(n=1), "Step 2 (Text): The zoomed image shows it clearly. Therefore, "
                                 "the answer is {first_option}."],
        cot="Step 1 (Text): I read it from the image. So the answer is {first_option}.",
    )
    scripts = {"looks": BUILTIN_SCRIPT, "concludes": concludes}
    config = RunConfig(models=tuple(ModelConfig(f"scripted:{name}") for name in scripts),
                       dataset="synthetic:1", limit=4, max_steps=MAX_STEPS,
                       settings=("cot", "no_render", "vaot", "wrong_render"))
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    store = MemoryStore()
    adapters = {f"scripted:{name}": ScriptedAdapter(name, s) for name, s in scripts.items()}
    asyncio.run(run_jobs(config, store, samples, adapters=adapters))
    records = list(project(store.iter_events()).values())

    def by_sample(model: str) -> dict:
        return {(r.sample_id, r.setting): r for r in records if r.model == f"scripted:{model}"}

    looks, concluded = by_sample("looks"), by_sample("concludes")
    assert looks.keys() == concluded.keys() and len(concluded) == 16
    assert {r.correct for r in concluded.values()} == {True, False}  # the first option is
    # right for two of the four samples
    for key, r in concluded.items():
        assert (r.status, r.steps, r.hit_max_steps) == ("answered", looks[key].steps, False)
        assert (r.answer, r.correct) == (looks[key].answer, looks[key].correct), key


def test_an_answer_naming_none_of_its_samples_options_is_marked_and_counted() -> None:
    # A real run: the model answers "the picture is unclear" in cot and the first option
    # otherwise. On a multiple-choice sample that is no option (scored wrong, marked apart from
    # a wrong pick); on a free-answer sample there is no option to name, so it is not marked.
    import msgspec

    from analysis.tables import ALL, accuracy_table

    unsure = Script(steps=["Step 1 (Text): I see it.\nFinal Answer: {first_option}"],
                    cot="Step 1 (Text): I cannot tell.\nFinal Answer: the picture is unclear")
    config = RunConfig(models=(ModelConfig("scripted:unsure"),), dataset="synthetic:1",
                       limit=4, max_steps=MAX_STEPS, settings=("cot", "vaot"))
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    free = samples[0].id
    samples = [msgspec.structs.replace(samples[0], choices=()), *samples[1:]]
    store = MemoryStore()
    asyncio.run(run_jobs(config, store, samples,
                         adapters={"scripted:unsure": ScriptedAdapter("unsure", unsure)}))
    records = list(project(store.iter_events()).values())
    assert len(records) == 8 and all(r.status == "answered" for r in records)
    assert {r.sample_id for r in records if not r.multiple_choice} == {free}
    marked = {(r.sample_id, r.setting) for r in records if r.no_option}
    assert marked == {(s.id, "cot") for s in samples[1:]}
    assert not any(r.correct for r in records if r.no_option)
    cells = accuracy_table(records)
    assert (cells["scripted:unsure", ALL, "cot"].no_option,
            cells["scripted:unsure", ALL, "vaot"].no_option) == (3, 0)
