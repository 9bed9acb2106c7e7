"""The function a demangled C++ kernel name names: its qualified name, nothing else.

Kineto and nsys print kernels as full signatures: a return type (``void``,
``std::enable_if<(bool)(8>0), void>::type``), the qualified name with template
arguments, the parameter list, sometimes ``const``. :func:`function_name` keeps the
qualified name (``vllm::fused_add_rms_norm_kernel``) and drops the rest.

The scanner tracks brackets the way a demangler writes them: ``<`` opens a template
argument list only after an identifier (``TensorInfo<``), never after a number or
inside an expression (``(8>0)``: a ``>`` whose innermost open bracket is a parenthesis
is a comparison); ``->`` is an arrow; an operator's name (``operator()``,
``operator<<``, ``operator new[]``) is one word; ``(anonymous namespace)`` and lambdas
(``{lambda(int)#1}``) are scopes, not parameter lists.
"""

from __future__ import annotations

import re
from functools import lru_cache

ANON = "{anon}"
_OPERATOR = re.compile(
    r"operator\s*(?:\(\)|\[\]|->\*?|<=>|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|"
    r"[-+*/%^&|~!=<>,]=?|\s+(?:new|delete)(?:\[\])?|\"\"\s*\w+|\s+[\w:]+[\s*&]*)"
)
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_TRAILING = re.compile(r"(?<=\))(?:\s*(?:const|volatile|noexcept|&&|&|\[clone [^\]]*\]))+\s*$")
_LAMBDA_ARGS = re.compile(r"\{lambda\([^{}]*\)(#\d+)\}")


def _depths(text: str) -> list[int]:
    """Bracket depth before each character (template ``<>`` included, as a demangler
    writes them); characters of an operator's name count as nested, never as brackets
    or separators."""
    depth: list[int] = []
    stack: list[str] = []
    guarded = _guarded(text)
    for i, ch in enumerate(text):
        if i in guarded:
            depth.append(len(stack) + 1)
            continue
        depth.append(len(stack))
        if ch in _OPENERS:
            stack.append(ch)
        elif ch in _CLOSERS:
            want = _CLOSERS[ch]
            while stack and stack[-1] != want:  # an unclosed '<' inside (a<b): drop it
                stack.pop()
            if stack:
                stack.pop()
        elif ch == "<" and _after_identifier(text, i):
            stack.append("<")
        elif ch == ">" and stack and stack[-1] == "<" and text[i - 1 : i] != "-":
            stack.pop()
    return depth


def _guarded(text: str) -> set[int]:
    """Positions inside operator names (after the keyword ``operator``)."""
    out: set[int] = set()
    for m in _OPERATOR.finditer(text):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
            continue  # "my_operator" is an identifier, not the keyword
        out.update(range(m.start() + len("operator"), m.end()))
    return out


def _after_identifier(text: str, i: int) -> bool:
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    return j < i and not text[j].isdigit()


def _groups(text: str, depth: list[int], openers: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level bracketed group opened by one of ``openers``
    (an unclosed group runs to the end)."""
    groups = []
    i, n = 0, len(text)
    while i < n:
        if depth[i] == 0 and text[i] in openers and i + 1 < n and depth[i + 1] > 0:
            j = i + 1
            while j < n and depth[j] > 0:
                j += 1
            groups.append((i, j))
            i = j
            continue
        i += 1
    return groups


def _split_top(text: str, sep: str) -> list[str]:
    depth = _depths(text)
    parts, last, i = [], 0, 0
    while i < len(text):
        if depth[i] == 0 and text.startswith(sep, i):
            parts.append(text[last:i])
            i += len(sep)
            last = i
            continue
        i += 1
    parts.append(text[last:])
    return parts


def _drop_groups(text: str, openers: str) -> str:
    """``text`` without its top-level groups opened by any of ``openers``."""
    out, last = [], 0
    for s, e in _groups(text, _depths(text), openers):
        out.append(text[last:s])
        last = e
    out.append(text[last:])
    return "".join(out)


def _component(part: str) -> str:
    """One scope of a qualified name, template arguments and parameters dropped."""
    part = part.strip()
    if part.startswith("{"):  # {lambda(int)#1}, {anon}, {unnamed type#1}
        return _LAMBDA_ARGS.sub(r"{lambda\1}", part)
    if re.match(r"operator\b", part):  # operator()<int>: the operator, not its arguments
        return re.sub(r"\s+", " ", re.sub(r"(?<=[^\s<>])<[^()]*>$", "", part))
    return _drop_groups(part, "<(").strip()


def _qualified(raw: str) -> str:
    """The qualified name with its template arguments: return type, parameters and
    trailing qualifiers dropped."""
    text = raw.strip().replace("(anonymous namespace)", ANON)
    text = _TRAILING.sub("", text)
    params = _groups(text, _depths(text), "(")
    if params and params[-1][1] == len(text) and params[-1][0] > 0:
        head = text[: params[-1][0]].rstrip()
        inner = _groups(head, _depths(head), "(")
        if head.endswith(")") and inner and inner[-1][1] == len(head):
            # void (*f(int))(float): a function returning a function pointer
            nested = head[inner[-1][0] + 1 : inner[-1][1] - 1].lstrip("*& ")
            if nested:
                return _qualified(nested)
        text = head
    chunks = [c for c in _split_top(text, " ") if c]
    return chunks[-1] if chunks else ""


@lru_cache(maxsize=65536)
def function_name(raw: str) -> str:
    """``std::enable_if<(bool)1, void>::type vllm::k<c10::BFloat16, 8>(float*, int)``
    → ``vllm::k``; a name that is no C++ signature comes back stripped."""
    text = raw.strip()
    if text.lower().startswith(("memcpy", "memset")):  # "Memcpy DtoD (Device -> Device)"
        return " ".join(_drop_groups(text, "(").split())
    scopes = [_component(p) for p in _split_top(_qualified(text), "::")]
    return "::".join(s for s in scopes if s) or text


def template_args(raw: str) -> list[str]:
    """The template arguments of the function's own name (``cutlass::Kernel2<X>(...)``
    → ``["X"]``), for launch wrappers whose argument is the real kernel."""
    last = _split_top(_qualified(raw), "::")[-1]
    groups = _groups(last, _depths(last), "<")
    if not groups:
        return []
    s, e = groups[-1]
    return [a.strip() for a in _split_top(last[s + 1 : e - 1], ",")]


def is_signature(name: str) -> bool:
    """Whether ``name`` still reads like a signature (a return type or parameters)."""
    if name.lower().startswith(("memcpy", "memset")):
        return False
    bare = name.replace(ANON, "").replace("operator()", "")
    return name.startswith(("void ", "std::", "typename ")) or "(" in bare
