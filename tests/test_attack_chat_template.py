"""Attacks through a model's chat template: a model from outside brings its own Jinja template and
every process that renders a prompt runs it. A template that loops for hours, recurses, or builds a
gigabyte string is refused when the tokenizer is loaded (naming the model folder) within seconds,
and any render stays within rollout/chat_template.py's deadline and size cap; the project's own
template renders exactly as transformers renders it."""

import copy
import time

import pytest

from rollout.agent_loop import ChatRenderer
from rollout.chat_template import BoundedTemplate, TemplateRefused, check_chat_template
from rollout.tiny_model import project_tokenizer
from rollout.tokenizer import load_tokenizer

HOSTILE = {
    "nested range loops": "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}",
    "a 1 GB string": "{{ 'x' * 10**9 }}",
    "a string doubled in a loop": "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                                  "{% endfor %}{{ ns.s|length }}",
    "a string grown by + in a loop": "{% set ns = namespace(s='x' * 1000) %}{% for i in range(40) %}"
                                     "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
    "silent loops over messages": "{% for a in range(1000) %}{% for b in range(1000) %}{% for m in messages %}"
                                  "{% endfor %}{% endfor %}{% endfor %}",
    "macro recursion, exponential": "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
                                    "{{ f(60)|length }}",
    "macro recursion, unbounded": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "a cycler loop": "{% set c = cycler('a', 'b') %}{% for i in range(1000) %}{% for j in range(1000) %}"
                     "{% set _ = c.next() %}{% endfor %}{% endfor %}",
    "aliases serialised": "{% set a = ['x' * 100000] %}{% set b = [a, a, a, a, a, a, a, a] %}{% set c = [b, b, b, b, b, b, b, b] %}"
                          "{% set d = [c, c, c, c, c, c, c, c] %}{% set e = [d, d, d, d, d, d, d, d] %}{{ e|tojson }}",
    "padding by format width": "{{ '%999999999d'|format(1) }}",
    "padding by a method": "{{ 'x'.ljust(999999999) }}",
    "replace as an amplifier": "{% set s = 'x' * 100000 %}{{ s|replace('x', s) }}",
    "a huge power": "{{ 10 ** 100000000 }}",
}


def tokenizer_with(template: str):
    tok = copy.deepcopy(project_tokenizer())
    tok.chat_template = template
    return tok


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_template_is_refused_at_load_within_seconds(name, tmp_path):
    folder = tmp_path / "model"
    tokenizer_with(HOSTILE[name]).save_pretrained(folder)
    t0 = time.monotonic()
    with pytest.raises(TemplateRefused) as refused:
        load_tokenizer(folder)
    assert time.monotonic() - t0 < 10, name
    assert str(folder) in str(refused.value) and "chat template" in str(refused.value), refused.value


@pytest.mark.parametrize("name", ["nested range loops", "a 1 GB string", "macro recursion, exponential"])
def test_a_renderer_over_a_hostile_template_is_refused_naming_the_model(name):
    tok = tokenizer_with(HOSTILE[name])
    t0 = time.monotonic()
    with pytest.raises(TemplateRefused, match="chat template"):
        ChatRenderer(tok)
    assert time.monotonic() - t0 < 10


def test_a_template_that_misbehaves_only_on_long_content_is_bounded_at_render():
    """The probe passes; a 100,000-character tool output then drives a quadratic loop: that render is
    refused at the deadline, not hung."""
    quadratic = ("{% for m in messages %}{% if m.content|length > 5000 %}{% for a in m.content %}{% for b in m.content %}"
                 "{% endfor %}{% endfor %}{% endif %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
    tok = tokenizer_with(quadratic)
    check_chat_template(tok, "model")  # the probe conversation is short: accepted
    template = BoundedTemplate(quadratic, "model")
    t0 = time.monotonic()
    with pytest.raises(TemplateRefused, match="deadline"):
        template.render(messages=[{"role": "tool", "content": "y" * 100_000}], deadline_s=1.0)
    assert time.monotonic() - t0 < 5


def test_sandbox_escapes_stay_refused():
    import jinja2

    for source in ("{{ self.__init__.__globals__ }}", "{{ ''.__class__.__mro__ }}", "{{ cycler.__init__.__globals__ }}",
                   "{{ namespace.__init__.__globals__.os }}", "{{ messages.append(1) }}"):
        with pytest.raises(jinja2.exceptions.SecurityError):
            BoundedTemplate(source).render(messages=[])


def test_the_projects_template_renders_as_transformers_renders_it():
    tok = project_tokenizer()
    renderer = ChatRenderer(tok)
    conversation = [{"role": "system", "content": "s"}, {"role": "user", "content": "u " * 1000},
                    {"role": "assistant", "content": "a"}, {"role": "tool", "content": "t\n" * 500},
                    {"role": "tool", "content": "{\"k\": 1}"}]
    for tools in (None, [ChatRenderer.PROBE_TOOL]):
        for gen in (True, False):
            assert renderer._render(conversation, gen, tools) == tok.apply_chat_template(
                conversation, tools=tools, tokenize=False, add_generation_prompt=gen)
