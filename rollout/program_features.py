"""Structure of the programs a model writes (the paper's Table 5 and its "DTC-like" programs).

A program is DTC-like when it makes exactly one tool call and uses no control flow: no loop,
conditional, try/except, comprehension or function definition — a JSON call dressed as code.
`prints_raw_result`: it prints a tool call's result as it came (`print(tools["x"](...))`, a name
bound to a call printed whole, or either through json.dumps / pprint): the raw data goes to the context.
"""

from __future__ import annotations

import ast

FEATURES = ("loops", "conditionals", "try_except", "comprehensions", "function_defs", "tool_calls")


def _is_tool_call(node: ast.Call) -> bool:
    """`tools["x"](...)` or `tools.get("x")(...)`."""
    func = node.func
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id == "tools":
        return True
    return (isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute)
            and isinstance(func.func.value, ast.Name) and func.func.value.id == "tools")


def _raw(node: ast.AST, bound: set[str]) -> bool:
    """`node` is a tool call's result as it came: the call, a name bound to one, or json.dumps of either."""
    if isinstance(node, ast.Call) and _is_tool_call(node):
        return True
    if isinstance(node, ast.Name):
        return node.id in bound
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dumps" \
            and node.args:
        return _raw(node.args[0], bound)
    return False


def _prints_raw_result(tree: ast.AST) -> int:
    bound = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
             and _is_tool_call(node.value) for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "pprint") \
                and any(_raw(a, bound) for a in node.args):
            return 1
    return 0


def program_features(code: str) -> dict[str, int]:
    """Counts of each structure; `syntax_error` = 1 when the program does not parse."""
    counts = dict.fromkeys(FEATURES, 0)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # model code: nested past the parser's recursion (RecursionError while building the tree; CPython's
        # parser stack, MemoryError) or holding a NUL byte (ValueError) is a program that does not parse,
        # never an error of the host reading it
        return counts | {"syntax_error": 1, "dtc_like": 0, "prints_raw_result": 0}
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.While | ast.AsyncFor):
            counts["loops"] += 1
        elif isinstance(node, ast.If | ast.IfExp):
            counts["conditionals"] += 1
        elif isinstance(node, ast.Try | ast.TryStar):
            counts["try_except"] += 1
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            counts["comprehensions"] += 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            counts["function_defs"] += 1
        elif isinstance(node, ast.Call) and _is_tool_call(node):
            counts["tool_calls"] += 1
    control = counts["loops"] + counts["conditionals"] + counts["try_except"] + counts["comprehensions"] \
        + counts["function_defs"]
    return counts | {"syntax_error": 0, "dtc_like": int(counts["tool_calls"] == 1 and control == 0),
                     "prints_raw_result": _prints_raw_result(tree)}
