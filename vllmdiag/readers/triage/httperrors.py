"""HTTP errors as clients and servers write them into a log (pure): a client's record of
an error status (httpx's, the OpenAI JavaScript client's, goose's, Xinference's client's),
the error body a client quotes (OpenAI's Python client, with or without a type, cut or
not; a JSON body, flat or nested as OpenAI nests it, or escaped inside another body;
FastAPI's ``detail``; vLLM's own ``ErrorInfo``; a JSON log record at error level), and
vLLM's answer to a request longer than the context, as a client relays it. Each reader
gives what the line says: the error's type (empty where it names none), its message, and
whether the words are the error's own rather than a relay of it; ``relays`` makes the
line's relay of it."""

from __future__ import annotations

import ast
import json
import re

#: (type, message, own): the error a line gives, and whether these are its own words.
Said = tuple[str, str, bool]

#: httpx's answer to an HTTP error status, as a client logs it (the server's own error
#: is in the server's log).
_HTTP_STATUS = re.compile(r"(?P<msg>(?:Server|Client) error '\d{3} [^']*' for url .*)$")
#: The OpenAI JavaScript client's record of an HTTP error status (``Error: 400 status code
#: (no body)``, behind an application's label: ``Error: OpenAI API error: 400 ..``), with
#: its type as printed; an application's upper-case ``ERROR:`` before it is a label.
_JS_HTTP_STATUS = re.compile(
    r"\b(?:(?P<type>Error|\w+Error)|ERROR): "
    r"(?P<msg>(?:[\w ]{1,40}: )?[45]\d\d status code\b.*?)[\"”]?\.?$"
)
#: The same status pasted alone, without the client's label (``400 status code (no body)``),
#: or inside a user's sentence (``I encountered a 400 status code (no body) error``).
_BARE_JS_STATUS = re.compile(
    r"^(?P<msg>[45]\d\d status code\b.*?)\.?$"
    r"|(?:^|[\s:：])(?P<said>[45]\d\d status code \(no body\))"
)
#: A client's record of the status a server answered (goose's ``Request failed: Request
#: failed with status: 422 Unprocessable Entity``, Xinference's client's ``Server error:
#: 400 - <the server's message>``).
#: A client's record of the status it got, then the server's message (coze-studio's
#: ``embed failed, error, status code: 400, status: 400 Bad Request, message: <msg>``).
_STATUS_MESSAGE = re.compile(r"\bstatus code: [45]\d\d\b.*?\bmessage: (?P<msg>\S.*)$")
#: A gRPC client's status (``rpc error: code = Unimplemented desc = Unexpected <class
#: 'NotImplementedError'>: Method not implemented!``): the server's description, typed
#: where it names the exception's class.
_RPC_STATUS = re.compile(
    r"\brpc error: code = \w+ desc = (?:Unexpected <class '(?P<type>[\w.]+)'>: )?(?P<msg>\S.*?)\"?$"
)
#: A client's record of an HTTP status with its reason phrase, then the server's words
#: (``HTTP 422: Unprocessable Entity - Failed to deserialize the JSON body ..``).
_STATUS_REASON = re.compile(r"\bHTTP [45]\d\d:? [A-Z][A-Za-z ]{2,40} - (?P<msg>\S.*)$")
_REQUEST_STATUS = re.compile(
    r"\b(?P<msg>Request failed(?::| with status:) (?:Request failed with status: )?"
    r"[45]\d\d\b.*?)\.?$"
)
_SERVER_ERROR = re.compile(r"\b(?:Server|Client) error: [45]\d\d - (?P<msg>\S.*)$")
#: FastAPI's error body as a client prints the response (``status_code: 404, body:
#: {'detail': 'Not Found'}``): the detail is the server's error.
_DETAIL_BODY = re.compile(
    r"\bstatus_code: [45]\d\d, body: \{['\"]detail['\"]: (?P<q>['\"])(?P<msg>.*?)(?P=q)\}"
)
#: A body nested as a string in another (a gateway's ``"message":"{\"code\":404,..
#: \"message\":\"model x not found\"..}"``), its escaped quotes kept: its message.
_ESCAPED_MESSAGE = re.compile(r'\\"message\\": ?\\"(?P<msg>(?:[^"\\]|\\[^"])+)\\"')
#: An HTTP error body as a client logs it: OpenAI's client (``Error code: 400 - {..,
#: 'message': '..', 'type': 'BadRequestError', ..}``), vLLM's own record of the error it
#: returns (``ErrorInfo(message='..', type='NotFoundError', ..)``), a JSON body
#: (``{"error":"AttributeError : '..' object has no attribute '..'"}``).
_OPENAI_BODY = re.compile(
    r"Error code: \d{3} - \{.*?'message': (?P<q>['\"])(?P<msg>.*?)(?P=q), 'type': '(?P<type>\w+)'"
)
#: The same body without a type (``Error code: 500 - {'message': 'Internal server
#: error'}``), and as JSON (``{"object":"error","message":"..","type":"BadRequestError",..}``,
#: a Java client's ``NonTransientAiException: 400 - {..}``): the message runs to the
#: ``type`` key, whatever quotes it holds.
_OPENAI_UNTYPED = re.compile(r"Error code: \d{3} - \{'message': (?P<q>['\"])(?P<msg>.*?)(?P=q)\}")
_JSON_BODY = re.compile(
    r'\{"object": ?"error", ?"message": ?"(?P<msg>.*?)", ?"type": ?"(?P<type>[^"]*)"'
)
#: The same JSON body without a type (FastChat's ``{"object":"error","message":"Not
#: Found","code":50001}``).
_JSON_UNTYPED = re.compile(r'\{"object": ?"error", ?"message": ?"(?P<msg>(?:[^"\\]|\\.)*)"[,}]')
#: The body as OpenAI's API (and newer vLLM) nests it: ``{"error": {"message": "..", "type":
#: "BadRequestError", ..}}``; the message is JSON, its escapes read.
_JSON_NESTED = re.compile(
    r'\{"error": ?\{"message": ?"(?P<msg>(?:[^"\\]|\\.)*)", ?"type": ?"(?P<type>[^"]*)"'
)
#: The body as Python prints the dict a client decoded (``{'object': 'error', 'message':
#: '..', 'type': 'BadRequestError', ..}``, or without its ``object``), pasted without the
#: status before it.
_REPR_BODY = re.compile(
    r"\{(?:'object': 'error', )?'message': (?P<q>['\"])(?P<msg>.*?)(?P=q), 'type': '(?P<type>\w+)'"
)
#: A result a client printed whose ``'error'`` field holds the error it got (``{'result':
#: {'error': "HTTPConnectionPool(host=..): Max retries exceeded .."}}``).
_ERROR_FIELD = re.compile(r"'error': (?P<q>['\"])(?P<msg>\S.+?)(?P=q)\}")
#: A body whose opening a paste garbled (``{“”Object:"error","message":""auto" tool ..",
#: "type":"BadRequestError",..}``): its message and type keys as JSON writes them.
_LOOSE_JSON_BODY = re.compile(
    r'"error",\s*"message": ?"(?P<msg>.+?)", ?"type": ?"(?P<type>[A-Z]\w*(?:Error|Exception))"'
)
#: An error body with a message and no type (``{"error": {"message": "Invalid or
#: unsupported audio file."}}``).
_UNTYPED_JSON_BODY = re.compile(r'^\{\s*"error":\s*\{\s*"message":\s*"(?P<msg>(?:[^"\\]|\\.)+)"')
#: The OpenAI JavaScript client's error for a status with a body: the status, then the
#: body's message (``400 As of transformers v4.44, default chat template is ..``).
_JS_STATUS_MESSAGE = re.compile(r"^[45]\d\d (?P<msg>[A-Z][a-z]+ [^{}]{30,})$")
_ERROR_INFO = re.compile(r"ErrorInfo\(message=(?P<q>['\"])(?P<msg>.*?)(?P=q), type='(?P<type>\w+)'")
#: The error object the OpenAI client decoded in place of a result, as its repr prints it
#: (``ChatCompletion(id=None, .. object='error', .. message="..", param=None,
#: type='BadRequestError')``).
_ERROR_OBJECT = re.compile(
    r"\bobject='error',.*?\bmessage=(?P<q>['\"])(?P<msg>.*?)(?P=q), .*?\btype='(?P<type>\w+)'"
)
_JSON_ERROR = re.compile(
    r'^\{"error": ?"(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)) ?: (?P<msg>(?:[^"\\]|\\.)+)"'
)
#: A JSON log record at error level (RunPod's worker): its message.
_JSON_RECORD_LEVEL = re.compile(r'"level": ?"(?:ERROR|CRITICAL|FATAL|error|critical|fatal)"')
_JSON_RECORD_MESSAGE = re.compile(r'"(?:message|msg)": ?"(?P<msg>(?:[^"\\]|\\.)+)"')
SAYS_WHAT_FAILED = re.compile(
    r"(?i)error|fail|\bnot\b|cannot|unable|invalid|unexpected|missing|refused|denied|timed out"
    r"|\brequired\b"
)
#: An error body pretty-printed over lines: its ``"message": ".."`` line, and the
#: ``"type"`` line that names the exception (straight quotes; a caller makes typographic
#: ones plain).
BODY_LINE = re.compile(r'^"message": ?"(?P<msg>(?:[^"\\]|\\.)+)",?$')
BODY_TYPE_LINE = re.compile(r"""^"type": ?['"](?P<type>[A-Z]\w*(?:Error|Exception))["'],?$""")
#: A client quoting the server's JSON error after the status
#: (``vllm API error 400: {"object":"error","message":"..``).
_API_ERROR_JSON = re.compile(r'\berror \d{3}: \{.*?"message": ?"(?P<msg>(?:[^"\\]|\\.)+)')
#: vLLM's answer to a request longer than the model's context, as a client relays it.
_CONTEXT = re.compile(
    r"This model's maximum context length is \d+ tokens\. However, you requested \d+ (?:output )?"
    r"tokens.*"
)
_OPENAI_TYPE = re.compile(r"'type': '(?P<type>\w+Error)'")


def body_error(text: str) -> tuple[str, str] | None:
    """(type, message) of an HTTP error body in ``text`` that the other readers do not
    take: OpenAI's without a type, a JSON one; the type only where the body's names an
    exception (``BadRequestError``, not ``Bad Request``)."""
    u = _OPENAI_UNTYPED.search(text)
    if u:
        return "", u["msg"].strip()
    j = _JSON_BODY.search(text)
    if j:
        return _exception_type(j["type"]), j["msg"].strip()
    u = _JSON_UNTYPED.search(text)
    if u:
        return "", u["msg"].strip()
    n = _JSON_NESTED.search(text)
    if n:
        try:
            msg = json.loads(f'"{n["msg"]}"')
        except ValueError:
            msg = n["msg"]
        return _exception_type(n["type"]), msg.strip()
    return None


def _exception_type(name: str) -> str:
    """A body's ``type`` where it names an exception (``BadRequestError``, not ``Bad
    Request`` or ``invalid_request_error``), else empty."""
    return name if re.fullmatch(r"[A-Z]\w*(?:Error|Exception)", name) else ""


#: A client's exception whose message is the status and the body the server answered
#: (OpenAI's ``Error code: 400 - {..}``, Spring AI's ``NonTransientAiException: 400 -
#: {"object":"error",..}``), or the body alone (the OpenAI client before 1.0: ``APIError:
#: Invalid response object from API: '{"object":"error",..}' (HTTP response code was 400)``).
_STATUS_BODY = re.compile(
    r"^(?:(?:Error code: |HTTP )?[45]\d\d - \{|Invalid response object from API: '\{"
    # a client that prints requests' status line, then the body (``API Error: 500 Server
    # Error: Internal Server Error for url: http://../v1/chat/completions. Response: {..}``)
    r"|(?:[\w ]+: )?[45]\d\d (?:Server|Client) Error: .*? for url: \S+ Response: \{)"
)
#: The message of the body OpenAI's client quotes, and the type after it.
_QUOTED_MESSAGE = re.compile(r"'message': (?P<q>['\"])(?P<msg>.*?)(?P=q)(?:, |\}|\.\.\.|…|$)")
_QUOTED_TYPE = re.compile(r"'type': '(?P<type>\w+)'")
#: FastAPI's own error body (``{'detail': 'Method Not Allowed'}``): its one message.
_QUOTED_DETAIL = re.compile(r"^[^{]*\{'detail': (?P<q>['\"])(?P<msg>.*?)(?P=q)\}")


def _type_after(text: str, start: int) -> str:
    """The body's ``'type'`` after its message (from ``start``) where it names an
    exception (``BadRequestError``), else empty."""
    t = _QUOTED_TYPE.search(text, start)
    return t["type"] if t and t["type"].endswith(("Error", "Exception")) else ""


def quoted_body(text: str) -> tuple[str, str] | None:
    """(type, message) of the body an exception's message quotes after the HTTP status
    (``Error code: 400 - {..}``, ``400 - {"object":"error",..}``): the server's error,
    typed where the body's type names an exception; None for another message."""
    if not _STATUS_BODY.match(text):
        return None
    quoted = _QUOTED_MESSAGE.search(text)
    if quoted:
        return _type_after(text, quoted.end()), quoted["msg"]
    detail = _QUOTED_DETAIL.search(text)
    if detail:
        return "", detail["msg"]
    return body_error(text)


#: Typographic quotes a paste (or a Chinese input method) put in place of plain ones,
#: read as plain; one character for one, so places in the text stay.
PLAIN_QUOTES = str.maketrans("‘’“”", "''\"\"")
_STATUS_OPENS = re.compile(r"\bError code: [45]\d\d - \{")


def typographic_body(text: str) -> Said | None:
    """The error of OpenAI's ``Error code: 400 - {..}`` whose quotes a paste made
    typographic (``{‘object’: ‘error’, ‘message’: “[..]”, ‘type’: ‘BadRequestError’``):
    its message as pasted, typed where the body's type names an exception."""
    if not any(q in text for q in "‘’“”"):
        return None
    plain = text.translate(PLAIN_QUOTES)
    opens = _STATUS_OPENS.search(plain)
    quoted = _QUOTED_MESSAGE.search(plain, opens.end()) if opens else None
    if quoted is None:
        return None
    return _type_after(plain, quoted.end()), text[quoted.start("msg") : quoted.end("msg")], False


def status(text: str) -> Said | None:
    """A client's record of the HTTP error status a server answered with (its reason is
    the server's): httpx's ``Server error '500 ..' for url ..``, the OpenAI JavaScript
    client's ``Error: 400 status code (no body)``."""
    h = _HTTP_STATUS.search(text) if "error '" in text else None
    if h:
        return "", h["msg"], False
    j = _JS_HTTP_STATUS.search(text) if "status code" in text else None
    if j:
        return j["type"] or "", j["msg"], False
    bare = _BARE_JS_STATUS.search(text) if "status code" in text else None
    if bare:
        return "", bare["msg"] or bare["said"], False
    said = _JS_STATUS_MESSAGE.match(text) if text[:1] in "45" else None
    if said:
        return "", said["msg"], False
    for needle, pattern in _STATUS_THEN_WORDS:
        told = pattern.search(text) if needle in text else None
        if told:
            return "", told["msg"], False
    rpc = _RPC_STATUS.search(text) if "rpc error: " in text else None
    return (rpc["type"] or "", rpc["msg"], False) if rpc else None


#: A client's status, then the server's words (what a line must hold for each to be
#: tried, and the pattern), in the order they are tried.
_STATUS_THEN_WORDS = (
    ("Request failed", _REQUEST_STATUS),
    ("status_code: ", _DETAIL_BODY),
    ("error: ", _SERVER_ERROR),
    ("HTTP ", _STATUS_REASON),
    ("status code: ", _STATUS_MESSAGE),
)


def context_length(text: str) -> Said | None:
    """vLLM's answer to a request longer than the model's context, as a client prints
    the 400 it got back."""
    c = _CONTEXT.search(text)
    if c is None:
        return None
    t = _OPENAI_TYPE.search(text)
    msg = c.group().split('", ')[0].rstrip("\"'")
    return t["type"] if t else "", msg, False


def body(text: str) -> Said | None:
    """The error an HTTP error body holds, as a client logs it: OpenAI's client, vLLM's
    ``ErrorInfo``, the error object the OpenAI client decoded, a JSON ``{"error": "Type :
    msg"}``, OpenAI's body without a type, a JSON body on one line."""
    for pattern in (_OPENAI_BODY, _REPR_BODY, _ERROR_INFO, _ERROR_OBJECT, _JSON_ERROR):
        b = pattern.search(text)
        if b:
            return b["type"], b["msg"].strip(), False
    said = body_error(text)
    if said is not None:
        return said[0], said[1], False
    for pattern in (_LOOSE_JSON_BODY, _ERROR_FIELD, _UNTYPED_JSON_BODY):
        b = pattern.search(text)
        if b:
            return b.groupdict().get("type") or "", b["msg"].strip(), False
    parsed = parsed_body(text)
    return (parsed[0], parsed[1], False) if parsed is not None else None


#: The longest text a body is parsed from (a body is a line; a page is no body).
_LONGEST_BODY = 20000


def parsed_body(text: str) -> tuple[str, str] | None:
    """(type, message) of an error body the line holds whole, parsed as JSON or as the
    dict Python prints, whatever order its keys come in: ``{"error": {"code": 500,
    "message": ".."}}``, ``{"error": ".."}``, ``{'message': "..", 'object': 'error'}``, a
    body nested as a string in another's ``message``; a body cut before it closes gives its
    message's first line. The type only where the body's names an exception; None where
    the line holds no such body (a dict without an error in it is no error)."""
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end - start > _LONGEST_BODY:
        return None
    value = _decoded(text[start : end + 1]) if end > start else None
    if value is None:
        cut = _CUT_MESSAGE.search(text[start:])  # a body the paste cut: its message's first line
        return ("", cut["msg"]) if cut else None
    return _error_of(value) if isinstance(value, dict) else None


#: The message of a JSON error body that the paste (or a UI) cut before it closed, up to
#: its first escaped line break.
_CUT_MESSAGE = re.compile(
    r'^\{"error": ?\{"message": ?"(?P<msg>(?:[^"\\]|\\[^n])+?)(?:\\n|\.\.\.|$)'
)


def _decoded(source: str) -> object:
    """``source`` read as JSON, else as the literal Python prints; None where it is
    neither."""
    try:
        return json.loads(source)
    except ValueError:
        try:
            return ast.literal_eval(source)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None


#: A body's error string that names its type (``"AttributeError : 'x' object has ..``).
_TYPED_TEXT = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)) ?: (?P<msg>\S.*)$")


def _error_of(body: dict[object, object]) -> tuple[str, str] | None:
    """(type, message) of a decoded error body (see ``parsed_body``)."""
    inner = body.get("error")
    if isinstance(inner, dict):
        return _error_of({**inner, "object": "error"})
    if isinstance(inner, str) and inner.strip():
        typed = _TYPED_TEXT.match(inner)
        return (typed["type"], typed["msg"]) if typed else ("", inner.strip())
    message = body.get("message", body.get("msg"))
    if isinstance(message, str) and message.lstrip().startswith("{"):
        nested = _decoded(message.strip())  # a body nested as a string in another's message
        if isinstance(nested, dict):
            return _error_of(nested)
    if body.get("object") != "error" or not isinstance(message, str) or not message.strip():
        return None
    kind = body.get("type")
    return _exception_type(kind) if isinstance(kind, str) else "", message.strip()


def body_text(text: str) -> Said | None:
    """The error message of a body a client prints after the status (``vllm API error
    400: {"object":"error","message":".."``), of a pretty-printed body's ``"message"`` line
    (the error's own line), or of a JSON log record at error level."""
    a = _API_ERROR_JSON.search(text)
    if a:
        return "", a["msg"], False
    e = _ESCAPED_MESSAGE.search(text) if '\\"message\\"' in text else None
    if e and SAYS_WHAT_FAILED.search(e["msg"]):
        return "", e["msg"], False
    line_body = BODY_LINE.match(text)
    if line_body and SAYS_WHAT_FAILED.search(line_body["msg"]):
        return "", line_body["msg"], True
    if '"level"' in text and _JSON_RECORD_LEVEL.search(text):
        j = _JSON_RECORD_MESSAGE.search(text)
        if j and SAYS_WHAT_FAILED.search(j["msg"]):
            return "", j["msg"], False
    return None
