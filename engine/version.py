"""The engine's version: which reading of replies and which rendering a run was recorded with.

Its own module so the run header, the resume checks and ``vaot --version`` read one value
without importing the runner (tests change it through this module).
"""

from __future__ import annotations

__all__ = ["ENGINE_VERSION"]

ENGINE_VERSION = "vaot-engine/14"
"""Bumped when a recorded run's events would come out differently for the same replies (what
is rendered, how it is corrupted, how seeds are derived); a run is resumed only by the engine
version that started it. 2: whole action blocks rendered, render seed without the setting,
audited wrong_render corruptions, chat turns replayed as they were sent. 3: replies read as the
December parser reads them (actions after a line of text in a fence, answers beside an action
that are no answers, earlier steps a reply restates, answer markers added since 2). 4: DeepEyes
boxes read on the original image, zooms bounded to the original's pixel count, outlines and
points on the canvas's last pixel, colours given as fractions scaled, the mirrored corruption
marked, an image index naming no image and a label the font cannot draw warned, earlier
replies sent back without their <think> blocks, under --image-history original+last:0 the
actions drawn on the original the model was shown, an invalid action also said not executed.
5: a reply concluding "Therefore, the answer is …" answered, "the final answer is" in a
supposition or a doubt ("what the final answer is", "…is not yet clear") no answer. 6: a reply
concluding "I think the answer is …", "So the answer: …", "The correct option is …" or "所以答案是
…", or ending on an "Ans:" line, answered; "the answer is between …"/"to zoom …", and a bare
"Answer:" line saying what comes next ("Let me zoom in first.", "pending"), no answer. 7: a
reply concluding "I'd say B", "I'd go with B", "I would say the answer is …", "答案应该是 …",
"故选C", "所以应该选B" or "Here is the answer: …" answered; "Final Answer: B. The zoom will
confirm this." read as B, and a marked answer no longer cut short at the word "answer" in it.
8: a reply concluding "I'll go with B", "I'm going with B", "I'd say it's B", "我选B",
"我的答案是B", "所以最终答案是B" or "Here is the answer to the question: …" answered; a choice
for the next step ("下一步，应该选C") and a concluding "the answer is 3 probably" no answer; a
hedge after a marked number or letter dropped ("Final Answer: 3 probably" gives 3); "Final
Answer: C. I'm not sure" and "B. I think so" keep their text; an option chosen for an action
("I'll go with option A to crop the image"), a choice under a next-step heading or after "So
next,", and "我的答案是：先放大看看" (a step still to take) no answer. 9: a reply concluding
'I'll go with "B"', "I'd say it's definitely B", "我选择的答案是B" or "The answer to question 2
is B." answered, a quoted letter read as its option under every form ('Final Answer: "B"',
"「B」"), a Chinese hedge after a marked answer dropped ("最终答案：B 可能" and "B 很可能" give B),
and a choice right after a next-step word that opens its sentence ("下一步，故选B", "Next step.
I'll go with B."), a hedged "所以答案是B 可能" and "答案是否正确…" no answer. 10: a line
asking about the final answer ("最终答案是否正确？", "最终答案是B吗？", "最终答案是什么？", "Final
answer? Let me check.") or putting it off ("最终答案还不确定", "Final answer not yet clear") after
a marker with no colon no answer, and a
next-step heading closed by exclamation marks or an ellipsis ("下一步！故选B", "Next step...
I'll go with B.", "下一步。。。故选B") heads the step's choice as one closed by a colon or a full stop does. 11: a "Final Answer:" that
names nothing yet, a template's blank ("?", "[your answer]") or an answer put off by a step of
the model's own ("to be determined after zooming", "pending the zoom", "TBD (need to zoom in)",
"需要放大后确定"), no answer, a blank after an answer ("Final Answer: B" … "Final Answer: ?", or after a tag or box)
leaving that answer, and a bare "TBD", "Pending" or "待定" kept with a warning (a status the image
may show, "Pending review" or "To be determined in 2025", is an answer); an answer read from prose
warned with the words it followed ("I'd say it's …", "故选 …") instead of always "the answer is
…"; a pixel box under one grid unit wide (one pixel of a 4000-pixel panorama) widened to the unit
holding its centre instead of refused as zero area (one off the image still refused); a
wrong_render of a whole view that mirroring leaves as it was (one pixel wide, or symmetric) turned
top to bottom; a concluding sentence with emphasis inside its words ("So, the **answer** is: B"),
clauses before or after its conclusion word ("…, so the answer is B", "综上所述，…，正确答案是C"), a
modal ("the answer must be B"), "I conclude", "I'm confident", "This means", 可以确定, 我判断,
"I'll choose B", "my final choice is B", 我的选择是B, 本题选C or 答案选C answered, "is clearly
B", "is indeed B" and "is therefore B" read as B, "Otherwise, the answer would be C" no answer; a
bare "Answer: TBD" or "So the answer is TBD." warned as the placeholder it is; a whole "[B]" or
"<B>", "option **B**" and "C。" read as that option. 12: a reply concluding with its answer
named first ("Therefore, B is the correct answer.", "(B) is correct.", "Thus, option (C) is the
right choice.", "The 2019 bar is the answer.", "B是正确答案。", "因此B选项正确。"), "So, it's B",
"所以是B", or a last "**Conclusion:** B" line answered (a reason after it too: "B is correct
because …"); negated, hedged, asked or supposed ones ("B is not correct", "B is probably the
answer", "Is B correct?", "If B is correct, …"), and a list item weighing one option, no
answer. 13: a label with a character Pillow's Aileron face cannot draw ("∠ABC", "θ", "x²", "3×4",
"café") drawn whole in a bundled subset of DejaVu Sans instead of with empty boxes (a label
Aileron draws renders as before); an image with an embedded colour profile that is not sRGB (a
Display P3 photo, an Adobe RGB scan, a profiled CMYK JPEG) converted to sRGB when decoded, so its
original's and every render's pixels differ from 12's, and no PNG sent or stored carries the
file's profile any more; a sample's options asked one per line when one of them holds a ";" (the
"; " between them did not say where such an option ended); a Gemini candidate its service stopped
(MALFORMED_RESPONSE, OTHER) retried as a fault, and one saying the request was wrong
(MISSING_THOUGHT_SIGNATURE, NO_IMAGE, IMAGE_OTHER) failed as a request defect that can stop the
model, neither recorded as the model's step; a vLLM reply cut short by its repetition detector
warned as such in its step. 14: a reply quoting the answer format it was asked for ('I must end
with "Final Answer: X" where X is A, B, C or D') answered by what it concludes later, not by
"X' where …"; boxes joined in one answer ("\\boxed{A} or \\boxed{B}", "\\boxed{A}\\boxed{C}") read
as both, which names no option, not as the last; a bare "Answer: B" line followed only by a
sign-off ("Hope this helps!") answered; an answer set under an "## Answer" or "**Answer**"
heading, or on a bare "Answer: B" line followed by an "Explanation:" section, answered; a whole
reply that is only an option letter of the sample's choices ("B", "(B)", "B. 15 cm") answered,
with a warning; a reply naming another answer after its final one keeps the final one and is
warned as such in its step."""
