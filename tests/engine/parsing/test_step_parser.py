"""parse_step behaviours the corpus does not pin down: tool-call objects, odd inputs, scale."""

from __future__ import annotations

import pytest

from adapters.models.base import ToolCall
from engine.parsing import DIALECTS, parse_step
from store.actions import Annotate, Zoom


def test_openai_tool_call_objects_of_every_shape():
    calls = [
        ToolCall(name="visual_action", arguments='{"type": "zoom", "target": [1, 2, 300, 400]}'),
        ToolCall(name="annotate", arguments='{"target": [10, 10, 50, 50], "content": "valve",}'),
        ToolCall(
            name="visual_action",
            arguments='{"visual_rationale": "why", "action": [{"type": "crop", "target": [0, 0, 9, 9]}]}',
        ),
        ToolCall(name="image_zoom_in_tool", arguments='{"bbox_2d": [5, 5, 60, 60], "img_idx": 2}'),
        ToolCall(name="web_search", arguments='{"q": "x"}'),
        ToolCall(name="zoom", arguments="not json at all"),
    ]
    parsed = parse_step("Let me look.", dialect="openai", tool_calls=calls)
    assert [type(a).__name__ for a in parsed.actions] == ["Zoom", "Annotate", "Crop", "Zoom"]
    assert parsed.action_sources == ("current", "current", "current", "observation_2")
    assert len(parsed.raw_actions) == 6
    assert parsed.raw_actions[0] == {
        "name": "visual_action",
        "arguments": '{"type": "zoom", "target": [1, 2, 300, 400]}',
        "id": "",
    }
    assert parsed.visual_rationale == "why"
    assert parsed.thought == "Let me look."
    assert "tool_calls" in parsed.flags and "invalid_action" in parsed.flags
    text = "\n".join(parsed.warnings)
    assert "unsupported tool 'web_search'" in text
    assert "JSON repaired" in text
    assert "6 proposed" not in text and "4 actions in one step" in text


def test_yxyx_applies_to_tool_arguments_but_not_to_zoom_tools():
    calls = [
        ToolCall(name="zoom", arguments='{"target": [100, 200, 300, 400]}'),
        ToolCall(name="image_zoom_in_tool", arguments='{"bbox_2d": [100, 200, 300, 400]}'),
    ]
    parsed = parse_step("", dialect="openai", convention="yxyx", tool_calls=calls)
    assert parsed.actions == (Zoom(target=(200, 100, 400, 300)), Zoom(target=(100, 200, 300, 400)))


def test_non_string_text_is_read_as_text():
    assert parse_step(None).thought == ""  # type: ignore[arg-type]
    assert parse_step(b"Final Answer: 3\xff").final_answer == "3\ufffd"  # type: ignore[arg-type]


def test_action_fields_come_out_canonical():
    reply = (
        'Step 1 (Text): mark it\n```json\n{"action": [{"type": "annotate", "target": '
        '["100", 200.4, 300, 400], "label": "  a   valve ", "shape": "CALLOUT"}]}\n```'
    )
    parsed = parse_step(reply)
    assert parsed.actions == (
        Annotate(target=(100, 200, 300, 400), content="a valve", shape="callout"),
    )
    assert parsed.raw_actions[0]["label"] == "  a   valve "  # the raw object is kept as written


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize(
    "text",
    [
        "{" * 20000,
        "{'a" * 10000,
        "<tool_call>" * 5000,
        "<grounding>{" * 5000,
        "Step 1 (Text): x\n" * 5000,
        "Final Answer: 3\n" * 5000,
        "Final: 3\n" * 5000,
        "Answer: 3\n" * 5000,
        "final: " * 20000,  # one long line: each marker's line start is looked for nearby only
        "answer: y " * 20000,
        "the final step: " * 5000,
        "So the answer is " * 20000,  # only the last "the answer is" is looked at closely
        "So the answer is 3.\n" + "Step 1:\n" * 20000,  # empty step markers after it
        "Ans: " * 20000,
        "ans " * 20000 + "x",
        "So the answer: " * 20000,
        "I think the correct option is " * 20000,
        "所以答案是" * 20000,
        "因此，我认为" * 20000 + "答案是B",
        "答案是B。" * 20000,
        "所以答案是3。\n" + "步骤 1：\n" * 20000,
        '```json\n{"action": [\n' * 3000,
        "<think>" * 5000 + "</think>" * 5000,
        "\\boxed{" * 10000,
        "Final Answer" + " " * 50000 + "x",
        "+" * 39 + "Final Answer: 2",
        "```\n```\n" * 25000,
        "~~~\n~~~\n" * 25000,
        "```a\n```\n" * 25000 + "~~~",
    ],
    ids=lambda t: repr(t[:14]),
)
def test_pathological_replies_parse_in_linear_time(text, dialect):
    # A quadratic scan would make these take minutes; the assertion is only that they finish.
    parsed = parse_step(text, dialect=dialect, canvas_size=(100, 100))
    assert "parser_error" not in parsed.flags


def test_a_marker_repeated_on_one_line_costs_its_length_not_its_square():
    # A model stuck repeating itself: each marker used to copy the rest of its line, so 112 kB
    # took 900 MB and a few MB killed the run.
    import tracemalloc

    text = "Step 1 (Text): x\n" + "Final Answer: " * 8000
    tracemalloc.start()
    parsed = parse_step(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * len(text), peak  # was ~8,000 × the text
    assert parsed.final_answer is None  # no marker says anything ("Final Answer:" it said)


def test_two_answers_on_one_line_are_two_answers():
    parsed = parse_step("Step 1 (Text): x\nFinal Answer: A Final Answer: B")
    assert parsed.final_answer == "B"
    assert "2 different final answers; kept the last" in parsed.warnings


@pytest.mark.parametrize(("dialect", "text"), [
    ("qwen3vl", '<tool_call>{"name": "image_zoom_in_tool", "arguments": '
                '{"bbox_2d": [0.1, 0.2, 0.5, 0.6]}}</tool_call>'),
    ("vaot", 'Step 1 (Text): z\n```json\n{"step": 1, "action": [{"type": "zoom", '
             '"target": [0.1, 0.2, 0.5, 0.6]}]}\n```'),
])
def test_a_box_given_as_fractions_is_scaled_with_a_warning(dialect, text):
    # Read on the 0–1000 grid as written, it was a zoom into a box one unit wide, silently.
    parsed = parse_step(text, dialect=dialect)
    (action,) = parsed.actions
    assert action.target == (100, 200, 500, 600)
    assert any("fractions of the image (0–1)" in w for w in parsed.warnings), parsed.warnings


def test_a_whole_box_of_zeros_and_ones_is_a_box_on_the_grid():
    text = ('Step 1 (Text): z\n```json\n{"step": 1, "action": [{"type": "zoom", '
            '"target": [0, 0, 1, 1]}]}\n```')
    parsed = parse_step(text)
    assert parsed.actions[0].target == (0, 0, 1, 1)
    assert not any("fractions" in w for w in parsed.warnings)


@pytest.mark.parametrize(("text", "answer"), [
    ("Step 1 (Text): the zoom shows three circles.\nFinal: C", "C"),  # before: no answer
    ("I counted again.\n**Final:** (B) dog", "(B) dog"),
    ("Final: 42", "42"),
    ("- Final: 42", None),  # a list item, as in a thought comparing states
    ("Final Answer: A\nFinal: B", "B"),  # the last marker, as for two "Final Answer"s
    ("Step 1 (Text): the final step: count the dots.", None),  # prose, not a marker
    ("Finally: B", None),
    ("We check the final - it is B", None),
    # Only the reply's last line, unlisted: a thought comparing states is prose, and its
    # action still runs.
    ("- Initial: 3 cars visible\n- Final: 5 cars visible", None),
    ("Initial: 3 cars.\nFinal: 5 cars.\nNow I count again.", None),
    ("I counted again.\nFinal:\n\n(C)\n", "(C)"),
    # "Answer:" too: without it the trajectory went on asking for steps up to --max-steps.
    ("The zoom shows three circles.\n**Answer:** (B) 3", "(B) 3"),
    ("Answer: the one on the left, as the zoom showed.\nThen I zoom again.", None),
    ("My answer: not yet; I need to zoom.", None),
    # Review: the tag on the next line was taken with its markup; a closing fence, rule or
    # template token after the answer hid it.
    ("Step 3 (Text): seen.\nAnswer:\n<answer>7</answer>", "7"),
    ("```\nStep 3 (Text): seen.\nAnswer: 7\n```", "7"),
    ("Step 3 (Text): seen.\nAnswer: 7\n---\n<|im_end|>", "7"),
    # "The final answer is" in Chinese: its 是 / 为 was taken as part of the answer.
    ("步骤 3：看过了。\n最终答案是：7", "7"),
    ("最终答案为 B", "B"),
    ("最终回答是：**C**", "C"),
    # "Answer:" in Chinese, as the bare form: the reply's last line only. Missed, the model
    # was asked for another step, paid.
    ("步骤 3：放大后看清了。\n答案：B", "B"),
    ("答案：B\n还需要再放大看看。", None),
    # "Ans:", the common abbreviation, the same way: a whole word on the reply's last line.
    ("Step 1 (Text): The bars show 3 and 5.\nAns: 4", "4"),
    ("I counted again.\n**ANS:** (B) 3", "(B) 3"),
    ("Ans: 4\nThen I zoom again.", None),
    ("- Ans: 4", None),
    ("Plans: 4", None),
    ("The total, ans: 4", None),
])
def test_a_bare_final_colon_opening_a_line_is_the_answer_marker(text, answer):
    parsed = parse_step(text, dialect="vaot")
    assert parsed.final_answer == answer


def test_an_answer_line_next_to_a_proposed_action_is_thought():
    # Review: the action block is blanked before the answer is looked for, so "Answer:" above
    # it counted as the reply's last line; the step then ended with the answer "pending" (now
    # no answer anyway: see the bare-line cases in test_concluding_answer.py), here "7".
    text = ("Step 1 (Text): so I zoom.\nAnswer: 7\n```json\n"
            '{"step": 1, "action": [{"type": "zoom", "target": [1, 2, 300, 400]}]}\n```')
    parsed = parse_step(text, dialect="vaot")
    assert parsed.final_answer is None and len(parsed.actions) == 1
    assert "read as thought" in parsed.warnings[-1]
    # "Final Answer" keeps its rule: next to an action it is still the answer, with a flag.
    parsed = parse_step(text.replace("Answer: 7", "Final Answer: 3"), dialect="vaot")
    assert parsed.final_answer == "3" and "action_and_answer" in parsed.flags


def test_an_answer_tag_under_an_answer_line_keeps_its_flag():
    parsed = parse_step("<think>The sign reads bakery.</think>\nAnswer:\n<answer>BAKERY</answer>",
                        dialect="deepeyes")
    assert parsed.final_answer == "BAKERY"
    assert {"final_answer", "answer_tag"} <= set(parsed.flags)


_ZOOM = ('{"step": 1, "visual_rationale": "Zoom on the plate.", "action": [{"type": "zoom", '
         '"target": [350, 500, 650, 700]}]}')


@pytest.mark.parametrize("fence_body", [
    f"Zoom into the metal plate to read the serial number.\n{_ZOOM}",  # a description line
    f"JSON:\n{_ZOOM}",  # a label line
    f"Step 1 (Action Description):\n{_ZOOM}",  # the header inside the fence
])
def test_a_line_of_text_before_the_object_in_a_fence_keeps_its_action(fence_body):
    # The repair read the line as a bare string and dropped the object after it: step 1 of a
    # vaot trajectory then rendered nothing, as if it were CoT.
    parsed = parse_step(f"Step 1 (Text): too small to read.\n\n```\n{fence_body}\n```")
    assert [a.target for a in parsed.actions] == [(350, 500, 650, 700)]


def test_two_objects_in_one_fence_keep_both_actions():
    second = _ZOOM.replace("350, 500, 650, 700", "10, 20, 300, 400")
    parsed = parse_step(f"Step 1 (Text): both matter.\n```json\n{_ZOOM}\n{second}\n```")
    assert [a.target for a in parsed.actions] == [(350, 500, 650, 700), (10, 20, 300, 400)]


_ACTION_BLOCK = ('Step 1 (Action Description):\n```json\n{"step": 1, "visual_rationale": "closer",'
                 ' "action": [{"type": "zoom", "target": [300, 420, 620, 700]}]}\n```')


@pytest.mark.parametrize("thought", [
    # A marker inside a sentence, the "the final answer is" form, an answer deferred: beside a
    # proposed action these are thought. Taken as answers, they ended the trajectory at step 1
    # with prose for its answer, and the zoom never ran.
    "Step 1 (Text): Two things decide the final answer: the colour of the car and its lights.",
    "Step 1 (Text): I cannot yet tell what the final answer is because both are tiny.",
    "Step 1 (Text): Too small to read.\n\nFinal Answer: (to be determined after zooming)",
])
def test_an_answer_that_is_no_answer_beside_an_action_is_thought(thought):
    parsed = parse_step(f"{thought}\n\n{_ACTION_BLOCK}")
    assert parsed.final_answer is None
    assert [a.target for a in parsed.actions] == [(300, 420, 620, 700)]
    assert "final answer" in parsed.thought.lower()


def test_a_final_answer_line_beside_an_action_is_still_the_answer():
    parsed = parse_step(f"Step 1 (Text): Seen.\n\n{_ACTION_BLOCK}\n\nFinal Answer: C")
    assert parsed.final_answer == "C" and "action_and_answer" in parsed.flags


def test_an_answer_line_beside_an_invalid_action_is_the_answer():
    # {"type": "none"} fills the one-action slot the protocol asks for; no action is proposed.
    text = ('Step 3 (Text): The needle is at 40 psi.\nStep 3 (Action Description):\n```json\n'
            '{"step": 3, "action": [{"type": "none"}]}\n```\n\n**Answer:** 40 psi')
    parsed = parse_step(text)
    assert parsed.actions == () and parsed.final_answer == "40 psi"


@pytest.mark.parametrize(("text", "answer", "choice"), [
    ("Final Answer: **B** (dog)", "B (dog)", "B"),  # was "B** (dog)"
    ("**Final Answer: B** - dog", "B - dog", "B"),
    ("Final Answer: **B**. The dog is under the table.", "B. The dog is under the table.", "B"),
    ("Final Answer:\n```\n40 psi\n```", "40 psi", None),  # was "`"
    ("Final Answer: a (red) car", "a (red) car", None),  # an article, not option A
])
def test_emphasis_and_fences_around_an_answer_are_not_part_of_it(text, answer, choice):
    parsed = parse_step(f"Step 3 (Text): Seen.\n{text}")
    assert (parsed.final_answer, parsed.answer_choice) == (answer, choice)


_RESTATED = ('Step 1 (Text): The sign is too small, so I zoom in on it.\n\nStep 1 (Action '
             'Description):\n```json\n{"step": 1, "action": [{"type": "zoom", "target": '
             '[600, 100, 900, 300]}]}\n```\n\nStep 2 (Text): The sign reads "Platform 4".')


def test_a_restated_earlier_step_is_not_read_again():
    # The see2think prompt shows the model its earlier steps, and some models copy them out
    # before the step asked for: step 1's zoom ran again, on the zoomed view.
    parsed = parse_step(_RESTATED, expected_step=2)
    assert parsed.actions == () and parsed.step == 2
    assert parsed.thought == 'The sign reads "Platform 4".'
    assert any("restates step 1 before Step 2" in w for w in parsed.warnings)
    # Without the step asked for (vaot parse without --step), it is read whole, as before.
    assert [a.target for a in parse_step(_RESTATED).actions] == [(600, 100, 900, 300)]
    # The step asked for first: nothing is cut.
    assert parse_step(_RESTATED, expected_step=1).actions != ()


def test_an_action_named_as_a_string_takes_its_fields_from_the_block():
    # Smaller models flatten the block: {"action": "zoom", "target": […]}. It was ignored.
    parsed = parse_step('Step 1 (Text): The sign is unreadable; zoom in.\n```json\n{"step": 1, '
                        '"visual_rationale": "sign", "action": "zoom", "target": [700, 40, 980, '
                        '220]}\n```')
    assert [a.target for a in parsed.actions] == [(700, 40, 980, 220)]
    assert parsed.visual_rationale == "sign" and parsed.step == 1


_Z2 = ('{"step": 2, "visual_rationale": "r", "action": [{"type": "zoom", '
       '"target": [200, 200, 600, 600]}]}')
_BOX_2D = '```json\n{"step": 1, "action": [{"type": "zoom", "box_2d": [100, 200, 500, 600]}]}\n```'


@pytest.mark.parametrize("text", [
    # A model numbering its own reasoning, or naming Step 1 before its new action: the action
    # is this step's (its JSON says step 2), and cutting at "Step 2" lost it.
    f"Step 1: The crop shows two cars; I need the left plate.\n```json\n{_Z2}\n```\n"
    "Step 2: After the zoom I will read the plate.",
    f"Step 1 (Text) showed the sign, so now I zoom on the plate:\n```json\n{_Z2}\n```\n"
    "Step 2 (Text): the plate will be readable after this zoom.",
])
def test_only_a_restatement_is_cut_before_the_step_asked_for(text):
    assert [a.target for a in parse_step(text, expected_step=2).actions] == [(200, 200, 600, 600)]


@pytest.mark.parametrize("after", ["Answer: pending", "Final Answer: (to be determined after zooming)"])
def test_an_answer_that_is_none_beside_an_invalid_action_is_thought(after):
    # The action fails validation (a box_2d), but the model was asking for one: "pending" ended
    # the trajectory as answered.
    parsed = parse_step(f"Step 1 (Text): I will zoom on the sign.\n{_BOX_2D}\n{after}")
    assert parsed.final_answer is None


@pytest.mark.parametrize(("fence", "targets"), [
    # A note after the block quoting step 1's zoom: that zoom ran again.
    (f"{_Z2}\nNote: step 1 used {{\"type\": \"zoom\", \"target\": [100, 100, 500, 500]}}.",
     [(200, 200, 600, 600)]),
    # A format example: read as an action beside the final answer.
    ('Action types: zoom, e.g. {"type": "zoom", "target": [100, 100, 400, 400]}', []),
])
def test_an_action_quoted_in_prose_inside_a_fence_is_not_run(fence, targets):
    parsed = parse_step(f"Step 2 (Text): Seen.\n```json\n{fence}\n```\nFinal Answer: B")
    assert [a.target for a in parsed.actions] == targets


def test_a_final_answer_on_the_step_markers_line_beside_an_action_is_the_answer():
    parsed = parse_step(f"Step 2 (Text): Final Answer: B\n```json\n{_Z2}\n```")
    assert parsed.final_answer == "B"


def test_two_restated_steps_are_cut_and_labelled_objects_in_a_fence_kept():
    def block(n, target):
        return ('```json\n{"step": ' + str(n) + ', "action": [{"type": "zoom", "target": '
                + target + '}]}\n```')

    reply = (f"Step 1 (Text): zoom the sign.\nStep 1 (Action Description):\n"
             f"{block(1, '[600,100,900,300]')}\nStep 2 (Text): zoom more.\n"
             f"Step 2 (Action Description):\n{block(2, '[100,100,200,200]')}\n"
             "Step 3 (Text): The sign reads 4.\nFinal Answer: 4")
    parsed = parse_step(reply, expected_step=3)
    assert (parsed.actions, parsed.step, parsed.final_answer) == ((), 3, "4")
    for body in ('{"type": "zoom", "target": [1,2,300,400]}\n'
                 '{"type": "zoom", "target": [500,500,900,900]}',
                 'JSON:\n{"type": "zoom", "target": [1,2,300,400]}'):
        parsed = parse_step(f"Step 1 (Text): zoom.\n```json\n{body}\n```")
        assert parsed.actions[0].target == (1, 2, 300, 400)


@pytest.mark.parametrize(("block", "answer"), [
    ('{"step": 3, "action": [{"type": "stop"}]}', "4"),  # a stop is no action: the answer
    ('{"step": 1, "action": [{"name": "zoom", "target": [1,2,300,400]}]}', None),  # an attempt
])
def test_what_counts_as_an_attempted_action_beside_an_answer_line(block, answer):
    parsed = parse_step(f"Step 3 (Text): reads 4.\n```json\n{block}\n```\nAnswer: "
                        f"{'4' if answer else 'pending'}")
    assert parsed.final_answer == answer
