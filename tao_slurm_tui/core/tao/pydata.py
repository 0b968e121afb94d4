"""Read module-level literals of a Python source file as data, without running it.

NVIDIA keeps two tables the catalogue needs in Python modules of ``nvidia-tao-core``:
``microservices/handlers/docker_images.py`` (container kind → image, each value an
``os.getenv(NAME, default=...)`` call) and ``microservices/constants.py`` (network → container
kind, ``set([...])`` of the data-services actions). Importing them would import the microservices
package (Flask, kubernetes ...); instead the assignments are parsed with :mod:`ast` and their
values evaluated with :func:`ast.literal_eval`, plus the two call shapes NVIDIA uses:
``os.getenv(name, default)`` gives its default, ``set([...])`` a set. Anything else is refused.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable


class NotALiteral(ValueError):
    """An assignment's value is not one of the shapes this reader evaluates."""


def _value(node: ast.expr) -> object:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
        name = ast.unparse(node.func)
        if name in ("os.getenv", "os.environ.get", "getenv"):
            # The default an unset variable gives: the second argument or default=...
            default: ast.expr | None = node.args[1] if len(node.args) > 1 else None
            for keyword in node.keywords:
                if keyword.arg == "default":
                    default = keyword.value
            return None if default is None else _value(default)
        if name in ("set", "frozenset", "list", "tuple") and len(node.args) <= 1:
            items = _value(node.args[0]) if node.args else ()
            if not isinstance(items, list | tuple | set | frozenset):
                raise NotALiteral(f"{name}() of a non-collection")
            return {"set": set, "frozenset": frozenset, "list": list, "tuple": tuple}[name](items)
        raise NotALiteral(f"call of {name}")
    if isinstance(node, ast.Dict):
        out: dict[object, object] = {}
        for key, val in zip(node.keys, node.values, strict=True):
            if key is None:
                raise NotALiteral("dict unpacking")
            out[_value(key)] = _value(val)
        return out
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [_value(e) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(items)
        return set(items) if isinstance(node, ast.Set) else items
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise NotALiteral(ast.unparse(node)[:60]) from None


def module_literals(source: str, names: Iterable[str]) -> dict[str, object]:
    """The values of the module-level assignments ``names`` in ``source``.

    Names not assigned in the module are left out of the result.

    Raises:
        SyntaxError: ``source`` is not Python.
        NotALiteral: a wanted assignment's value is not data.
    """
    wanted = set(names)
    found: dict[str, object] = {}
    for stmt in ast.parse(source).body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for target in targets:
            if isinstance(target, ast.Name) and target.id in wanted and value is not None:
                found[target.id] = _value(value)
    return found


def class_names(source: str) -> list[str]:
    """Names of the classes defined at module level in ``source``, in order."""
    return [s.name for s in ast.parse(source).body if isinstance(s, ast.ClassDef)]
