"""A model's chat template rendered within a deadline and a size cap.

A model from outside (`model import-gguf`, `model.path`) brings its own Jinja chat template, and every
process that renders a prompt runs it: a template with nested loops (`range(100000)` inside
`range(100000)`) would hang each of them, one that builds a 1 GB string would exhaust their memory.
`BoundedTemplate` renders it as transformers' `apply_chat_template` does (the same sandboxed
environment: trim_blocks, lstrip_blocks, loopcontrols, `generation`, tojson, raise_exception,
strftime_now; the tokenizer's special tokens as variables), so the text is identical, with these bounds:

  * time: while the template's own code runs, a line tracer (sys.settrace, local to the frames of the
    compiled template: filters and the rest of the process are not traced) checks the deadline every
    256 lines, so loops, macros calling macros and recursion end with `TemplateRefused` at the
    deadline. `range` charges its length to a per-render budget too.
  * size: what a single C-level step could blow up before the tracer sees the next line is checked
    before it runs: `*`, `**`, `%` and `+` (sandbox-intercepted operators), `~` and block/macro
    joins, every call's and filter's arguments (integers over the cap, format widths of seven digits
    and more, and the expanded size of the strings and containers passed, aliases counted each time:
    `[s, s, s, s]` nested ten deep is 4**10 copies of s to tojson), what an output expression prints
    (`finalize`), and the rendered text as it streams.

A template that breaks a bound is refused with what it did; `check_chat_template` renders a probe
conversation when a tokenizer is loaded, so a template that cannot render it is refused at load,
naming the model. Normal templates render a turn in well under a millisecond; the tracer costs only
inside template code.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

#: seconds one render may take (a chat template renders a turn in milliseconds)
DEADLINE_S = 2.0
#: characters one render may produce, and the most any value inside it may expand to
MAX_CHARS = 64 * 2**20
#: iterations `range` may hand out in one render
MAX_RANGE_STEPS = 1_000_000
_WIDE = re.compile(r"\d{7,}")  # a format width or precision of millions: padding as an amplifier


class TemplateRefused(ValueError):
    """A chat template that broke a bound of `BoundedTemplate` (the message says which)."""


class _Budget(threading.local):
    deadline: float = 0.0
    steps: int = 0
    lines: int = 0
    active: bool = False


_budget = _Budget()


def _over_time() -> None:
    if _budget.active and time.monotonic() > _budget.deadline:
        raise TemplateRefused(f"the chat template ran past its deadline ({DEADLINE_S:g} s)")


def weight(value: Any, limit: int = MAX_CHARS, depth: int = 0) -> int:
    """The characters `value` expands to when printed or serialised (strings' lengths, containers'
    items summed, an alias counted each time it appears), stopping once past `limit`."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3 + 1
    if depth > 64:
        return limit + 1
    if isinstance(value, dict):
        items: Any = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        return 8
    total = 2 + len(items)
    for item in items:
        if total > limit:
            break
        total += weight(item, limit - total, depth + 1)
    return total


def _check_value(value: Any, what: str) -> None:
    if weight(value) > MAX_CHARS:
        raise TemplateRefused(f"the chat template would make {what} over {MAX_CHARS} characters")


def _check_args(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    _over_time()
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_CHARS:
            raise TemplateRefused(f"the chat template passes {what} the number {str(arg)[:20]}…, over the cap "
                                  f"{MAX_CHARS}")
        if isinstance(arg, str) and _WIDE.search(arg) and ("{" in arg or "%" in arg):
            raise TemplateRefused(f"the chat template formats with a width of millions in {what}")
    _check_value([*args, *kwargs.values()], f"the arguments of {what}")


def _bounded_range(*args: int) -> range:
    _check_args(args, {}, "range")
    rng = range(*args)
    _budget.steps += len(rng)
    if _budget.steps > MAX_RANGE_STEPS:
        raise TemplateRefused(f"the chat template's loops over range() ran past {MAX_RANGE_STEPS} steps")
    return rng


def _guard(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _check_args(args, kwargs, f"the filter {name!r}")
        strings = [a for a in args if isinstance(a, str)]  # replace takes the eval context first
        if name == "replace" and len(strings) >= 3:
            text, old, new = strings[:3]
            grown = len(text) + (text.count(old) if old else len(text) + 1) * len(new)
            if grown > MAX_CHARS:
                raise TemplateRefused(f"the chat template's replace would make a string over {MAX_CHARS} characters")
        out = func(*args, **kwargs)
        if isinstance(out, str) and len(out) > MAX_CHARS:
            raise TemplateRefused(f"the filter {name!r} made a string over {MAX_CHARS} characters")
        return out

    for attr in ("jinja_pass_arg",):  # pass_context / pass_eval_context / pass_environment markers
        if hasattr(func, attr):
            setattr(guarded, attr, getattr(func, attr))
    return guarded


def _joiner(join: Callable[[Any], str]) -> Callable[[Any], str]:
    def checked(seq: Any) -> str:
        items = list(seq)
        _check_value(items, "a joined string")
        return join(items)

    return checked


def _environment() -> Any:
    import jinja2
    import jinja2.ext
    from jinja2 import nodes
    from jinja2.runtime import markup_join, str_join
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(jinja2.ext.Extension):
        """transformers' `{% generation %}` block (its AssistantTracker, inactive: the body as is)."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return caller()

    class BoundedEnvironment(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%", "+"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _over_time()
            if operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 \
                    and right > 4096:
                raise TemplateRefused("the chat template raises a number to a power over 4096")
            if operator == "*":
                for seq, n in ((left, right), (right, left)):
                    if isinstance(n, int) and isinstance(seq, str | list | tuple) and n > 0 \
                            and weight(seq) * n > MAX_CHARS:
                        raise TemplateRefused(f"the chat template would make a value over {MAX_CHARS} characters "
                                              "with *")
            if operator == "%" and isinstance(left, str):
                _check_args((left, *(right if isinstance(right, tuple) else (right,))), {}, "%-formatting")
            if operator == "+" and isinstance(left, str | list | tuple):
                _check_value([left, right], "a value")
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            what = f"{getattr(__obj, '__name__', type(__obj).__name__)}()"
            owner = getattr(__obj, "__self__", None)
            _check_args((*args, *([owner] if isinstance(owner, str | list | tuple | dict) else [])), kwargs, what)
            return super().call(__context, __obj, *args, **kwargs)

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def finalize(value: Any) -> Any:
        _check_value(value, "an output")
        return value

    env = BoundedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols],
                             finalize=finalize)
    env.filters["tojson"] = tojson
    env.filters = {name: _guard(name, f) for name, f in env.filters.items()}
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    env.globals["range"] = _bounded_range
    env.concat = _joiner("".join)  # type: ignore[method-assign]
    env._bounded_joins = {"str_join": _joiner(str_join), "markup_join": _joiner(markup_join)}
    return env


def _tracer(frame: Any, event: str, arg: Any) -> Any:
    """The global trace function: only the template's own frames get the line counter."""
    return _count_lines if frame.f_code.co_filename == "<template>" else None


def _count_lines(frame: Any, event: str, arg: Any) -> Any:
    _budget.lines += 1
    if _budget.lines & 255 == 0:
        _over_time()
    return _count_lines


class BoundedTemplate:
    """A chat template compiled in the bounded environment (module docstring); `render` takes what
    transformers' apply_chat_template passes (messages, tools, add_generation_prompt, special tokens)."""

    def __init__(self, source: str, where: str = "the chat template"):
        import jinja2

        self.where = where
        try:
            self.template = _environment().from_string(source)
        except jinja2.TemplateError as exc:
            raise TemplateRefused(f"{where}: does not compile: {exc}") from None
        joins = self.template.environment._bounded_joins
        self.template.root_render_func.__globals__.update(joins)  # `~` and `{% set %}` blocks, checked

    def render(self, deadline_s: float = DEADLINE_S, **variables: Any) -> str:
        """The rendered text; TemplateRefused (naming `where`) when a bound is broken."""
        if _budget.active:  # a template rendering a template: the outer budget holds
            return self._stream(variables)
        _budget.active, _budget.steps, _budget.lines = True, 0, 0
        _budget.deadline = time.monotonic() + deadline_s
        previous = sys.gettrace()
        sys.settrace(_tracer)
        try:
            return self._stream(variables)
        except TemplateRefused as exc:
            raise TemplateRefused(f"{self.where}: {exc}") from None
        except RecursionError:
            raise TemplateRefused(f"{self.where}: the chat template recursed too deeply") from None
        except MemoryError:
            raise TemplateRefused(f"{self.where}: the chat template ran out of memory") from None
        finally:
            sys.settrace(previous)
            _budget.active = False

    def _stream(self, variables: dict[str, Any]) -> str:
        out: list[str] = []
        size = 0
        chunks: Iterator[str] = self.template.generate(**variables)
        for chunk in chunks:
            size += len(chunk)
            if size > MAX_CHARS:
                raise TemplateRefused(f"the chat template rendered over {MAX_CHARS} characters")
            out.append(chunk)
            _over_time()
        return "".join(out)


PROBE_CONVERSATION = [{"role": "system", "content": "You are a probe."}, {"role": "user", "content": "Hello?"},
                      {"role": "assistant", "content": "Hi."}, {"role": "tool", "content": "result"},
                      {"role": "user", "content": "Thanks."}]
PROBE_TOOLS = [{"type": "function", "function": {"name": "probe", "description": "A probe.",
                                                 "parameters": {"type": "object", "properties": {}}}}]


def check_chat_template(tokenizer: Any, where: str) -> None:
    """Refuse (TemplateRefused naming `where`) a tokenizer whose chat template cannot render a small
    probe conversation, with and without tools, within the deadline and size cap. A template that
    raises on the probe (its own raise_exception: it wants other roles) is left to ChatRenderer, which
    says what it needs."""
    import jinja2

    sources = tokenizer.chat_template if isinstance(tokenizer.chat_template, dict) else \
        {"default": tokenizer.chat_template}
    for name, source in sources.items():
        if not isinstance(source, str):
            continue
        template = BoundedTemplate(source, f"{where}: chat template {name!r}")
        for tools in (None, PROBE_TOOLS):
            try:
                template.render(messages=PROBE_CONVERSATION, tools=tools, documents=None, add_generation_prompt=True,
                                **dict(getattr(tokenizer, "special_tokens_map", {})))
            except TemplateRefused:
                raise
            except (jinja2.TemplateError, TypeError, ValueError, KeyError, IndexError, AttributeError):
                continue
