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
#: Distinct kernel names whose parse is kept: both sides of a diff share most names, so
#: the second side's are found, not parsed again (a few hundred bytes each).
NAMES_CACHED = 1 << 18
_OPERATOR = re.compile(
    r"operator\s*(?:\(\)|\[\]|->\*?|<=>|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|"
    r"[-+*/%^&|~!=<>,]=?|\s+(?:new|delete)(?:\[\])?|\"\"\s*\w+|\s+[\w:]+[\s*&]*)"
)
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_TRAILING = re.compile(r"(?<=\))(?:\s*(?:const|volatile|noexcept|&&|&|\[clone [^\]]*\]))+\s*$")
_LAMBDA_ARGS = re.compile(r"\{lambda\([^{}]*\)(#\d+)\}")
_BRACKET = re.compile(r"[()\[\]{}<>]")
#: An identifier (not starting with a digit) right before '<': the '<' at its end opens
#: template arguments; after a number or a space it is a comparison.
_IDENT_BEFORE_LT = re.compile(r"(?<!\w)(?!\d)\w+(?=<)")


def _depths(text: str) -> list[int]:
    """Bracket depth before each character (template ``<>`` included, as a demangler
    writes them); characters of an operator's name count as nested, never as brackets
    or separators.

    Linear in the name: only its bracket characters are visited in Python (a C regex
    finds them), the runs between them are filled at C speed. A kernel name is a few
    hundred characters and a trace can hold 200,000 distinct ones."""
    n = len(text)
    guarded = _guarded(text) if "operator" in text else set()
    opens_template = {m.end() for m in _IDENT_BEFORE_LT.finditer(text)} if "<" in text else ()
    depth: list[int] = []
    stack: list[str] = []
    pos = 0
    for m in _BRACKET.finditer(text):
        i = m.start()
        if i in guarded:
            continue
        depth.extend([len(stack)] * (i + 1 - pos))
        pos = i + 1
        ch = text[i]
        if ch in _OPENERS:
            stack.append(ch)
        elif ch in _CLOSERS:
            want = _CLOSERS[ch]
            while stack and stack[-1] != want:  # an unclosed '<' inside (a<b): drop it
                stack.pop()
            if stack:
                stack.pop()
        elif ch == "<":
            if i in opens_template:
                stack.append("<")
        elif stack and stack[-1] == "<" and text[i - 1 : i] != "-":  # '>', not '->'
            stack.pop()
    depth.extend([len(stack)] * (n - pos))
    for i in guarded:  # inside an operator's name: nested, whatever the stack
        depth[i] += 1
    return depth


def _guarded(text: str) -> set[int]:
    """Positions inside operator names (after the keyword ``operator``)."""
    out: set[int] = set()
    for m in _OPERATOR.finditer(text):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
            continue  # "my_operator" is an identifier, not the keyword
        out.update(range(m.start() + len("operator"), m.end()))
    return out


def _groups(text: str, depth: list[int], openers: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level bracketed group opened by one of ``openers``
    (an unclosed group runs to the end)."""
    groups = []
    n = len(text)
    end = 0
    for m in _opener_re(openers).finditer(text):
        i = m.start()
        if i < end or depth[i] != 0 or i + 1 >= n or depth[i + 1] == 0:
            continue
        try:
            end = depth.index(0, i + 1)  # where the group's depth returns to the top
        except ValueError:
            end = n
        groups.append((i, end))
    return groups


@lru_cache(maxsize=16)
def _opener_re(openers: str) -> re.Pattern[str]:
    return re.compile("[" + re.escape(openers) + "]")


def _split_top(text: str, sep: str) -> list[str]:
    depth = _depths(text)
    parts, last = [], 0
    i = text.find(sep)
    while i != -1:
        if depth[i] == 0:
            parts.append(text[last:i])
            last = i + len(sep)
            i = text.find(sep, last)
        else:
            i = text.find(sep, i + 1)
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


@lru_cache(maxsize=NAMES_CACHED)
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
