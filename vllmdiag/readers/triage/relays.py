"""Lines in which a process around vLLM relays an error it got, without a traceback of
its own: a server or runtime saying what failed and quoting the error (``Failed to
initialize Python stub: TypeError: ..``, ``Failed to import python 'vllm' module. ..
AttributeError: ..``), an error record saying a server failed to start and why, the same
in Chinese, a failure phrase quoting the exception's repr, an error quoted as one
string with its line breaks escaped (the last line names it), a pydantic validation
error's body line whose header line is cut, vLLM's own request-length message as a
client prints the 400 it got back, HTTP error statuses and bodies (read by
``httperrors``), and a proxy's or a serving wrapper's note that the server behind it is
gone, a framework's record that a step failed with the error on the next line, one
error of a server's validation list as a client prints it under its own label, a
framework's record of an exception it caught, and Docker Compose's and gcloud's records
that a container did not come up.

Also an error a person quotes in prose, in backticks (``it complains `AttributeError:
..` ``; an untyped ``f() got an unexpected keyword argument 'x'``), and pip's resolver
refusing an install (``Cannot install vllm because these package versions have
conflicting dependencies.``), Docker's refusal to start a container or to build (its
message goes on over the next lines), an exception line a sentence runs into (in
Chinese, or after the user's own word for it: ``I meet the bug RuntimeError: ..``), a CUDA
call's check in compiled code, and a compiler's diagnostic: these are the error's own
words, read as its exception line."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

from vllmdiag.readers.triage import httperrors
from vllmdiag.readers.triage.lines import Line

#: A failure phrase, then the error it quotes, typed.
_TYPED = re.compile(
    r"(?:\b[Ff]ailed to [\w' .-]+?|\bError (?:in|while|during) [\w' .-]+?)[:.?!]"
    r"(?: [^:]*?[.?!])? (?P<type>[A-Z]\w*(?:Error|Exception)): (?P<msg>\S.*)$"
)
#: A failure phrase quoting the exception's repr (vLLM's ``Failed to import from vllm._C
#: with ImportError('..: undefined symbol: ..')``, or after a colon: ``.. vllm._C:
#: ModuleNotFoundError("No module named 'vllm._C'")``, logged as a warning).
_REPR = re.compile(
    r"\b[Ff]ailed to [\w' .-]+?(?: with|:) (?P<type>[A-Z]\w*(?:Error|Exception))"
    r"\((?P<q>['\"])(?P<msg>.+?)(?P=q)\)"
)
#: A program's fatal error line, Go's cobra, Rust's anyhow and click print it so:
#: ``Error: ModelFactory not initialized``.
#: click's words when it refuses a command line (``Error: Missing option '--target'``):
#: a refused command line (``watch`` reads it), not a program's error.
CLICK_REFUSAL = (
    r"(?:Missing (?:option|argument|field|parameter)|No such (?:option|command)"
    r"|Invalid value for|Got unexpected extra arguments?)\b"
)
_PROGRAM_ERROR = re.compile(rf"^Error: (?!{CLICK_REFUSAL})(?P<msg>[A-Za-z]\S*(?: \S+)+)$")
#: A framework relaying a Python argument error without its type (RAGFlow's ``Fail to
#: access model(VLLM/x).Completions.create() got an unexpected keyword argument 'y'``,
#: a router's ``Error loading config file: X.__init__() missing 7 required ..``).
_RELAYED_ARGS = re.compile(
    r"\b(?:Fail(?:ed)? to|Error (?:loading|in|while|during|when)) [^.:]*?(?:\([^)]*\))?[.:] ?"
    r"(?P<msg>[\w.]+\(\) (?:got an unexpected keyword argument|got multiple values for"
    r"|missing \d+ required|takes \d+ positional) .+)$"
)
#: RAGFlow relaying what failed when it called a model (``Fail to access model(VLLM/x).
#: 'NoneType' object has no attribute 'strip'``).
_MODEL_ACCESS = re.compile(
    r"\bFail to access model ?\([^)]*\)\.\s*(?:\*\*ERROR\*\*: ?|ERROR: ?)?(?P<msg>\S.*)$"
)
#: An exception line behind a label the user put before it (``【BUG】：RuntimeError: ..``,
#: a comment in a pasted script: ``# Error: RuntimeError: ..``, a word of the user's own:
#: ``7b-model: torch.cuda.OutOfMemoryError: ..``, or an arrow: ``VLLM -> VLLMValidationError:
#: ..``).
_LABEL = re.compile(
    r"^(?:【[^】]{1,20}】\s*[:：]?|#\s*(?:Error|ERROR|error)\s*:|[\w.-]{1,20} ->"
    r"|(?![\w.-]*(?:Error|Exception|Warning):)(?:[\w.-]{1,20} ){0,2}[\w.-]{1,40} ?:)\s*"
    r"(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>\S.*)$"
)
#: An exception line a user's sentence names after its own word for it (``there is an
#: attribute error: AttributeError: ..``, ``I meet the bug RuntimeError: ..``, ``I keep
#: hitting this error “ openai_harmony.HarmonyError: ..”``, ``I get this error "KeyError:
#: '..'" Can anyone help ..``).
_SENTENCE_TYPED = re.compile(
    r"(?:\b(?:an?|the|this|that|following)\s+(?:\w+\s+)?(?:error|exception|bug)\b"
    r"(?:\s+(?:occurs|occurred|happens|happened|appears|appeared|about|like|saying))?"
    r"|\bfailed with)"
    r"(?:\s*[:：]\s*|\s+)(?P<q>[\"“])?\s*"
    r"(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>\S.*?)"
    # a quoted error ends at its closing quote, whatever the sentence goes on to say
    r"(?(q)\s*[\"”]|\s*$)"
)
#: A ``raise`` statement and its exception line run together on one line (``raise
#: ValueError("No available memory .. " ValueError: No available memory ..``).
_RAISE_GLUED = re.compile(
    r"^raise [\w.]+\(.*?\s(?P<type>[A-Z][\w.]*(?:Error|Exception)): (?P<msg>\S.*)$"
)
#: A builtin exception's line a user retyped in lower case (``valueerror: bfloat16 is
#: only supported ..``): the type as printed.
_LOWER_TYPED = re.compile(
    r"^(?P<type>(?:value|type|runtime|import|attribute|key|index|os|modulenotfound|assertion"
    r"|notimplemented|filenotfound|memory)error): (?P<msg>\S.*)$"
)
#: An exception line a user's sentence runs into after a comma (``I kept getting errors
#: when running it, TypeError: ..``).
_COMMA_TYPED = re.compile(
    r"[a-z][,，]\s*(?P<type>[A-Z][A-Za-z]*(?:Error|Exception)): (?P<msg>\S.*?)\s*$"
)
#: A typed error a user's sentence quotes, with more of the sentence after the quote
#: (``It shows "ImportError: cannot import name 'x' from 'y'". Am I ..``).
_QUOTED_TYPED = re.compile(
    r"\b(?:shows?|showed|says?|said|got|gets?|gives?|gave|throws?|threw|raises?|raised)"
    r'\s+["“]\s*(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>[^"”]+?)\s*["”]'
)
#: glibc's report of a failed C or C++ ``assert`` (``python: /x/Allocation.cpp:47:
#: <function>: Assertion `..' failed.``): the message from ``Assertion``; the program,
#: the place and the function before it.
_C_ASSERT = re.compile(r"^(?:[\w.-]+: )?\S+:\d+: .+?: (?P<msg>Assertion `.+' failed\.?)$")
#: The error's words in a user's sentence (``It resulted in the error: <msg>``).
_PROSE_ERROR = re.compile(
    r"\b(?:resulted in|results in|got|get|gives?|gave|throws?|threw|raised?|shows?|showed"
    r"|causes?|caused|[Hh]ere is|[Hh]ere's)"
    r" (?:the |this |an |a |following )?(?:error|exception)(?:[:：] [`\"“]?| [`\"“] ?)"
    r"(?P<msg>[A-Za-z]\S*(?: \S+)+)$"
)
#: An error's own line, typed (its message may go on over lines: ``.`` takes them).
TYPED_WORDS = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>\S.*)$", re.S)
#: The characters of a sentence in Chinese or Japanese (kana, CJK ideographs, full-width
#: punctuation), as a character class's contents.
CJK = r"\u3000-\u30ff\u3400-\u9fff\uff00-\uffef"
#: An exception line a user's sentence in Chinese or Japanese runs straight into, no space
#: between (``vllm部署报错ValueError: ..``: "deploying vllm reports an error").
_CJK_TYPED = re.compile(
    rf"[{CJK}] ?(?P<type>(?:[a-z_]\w*\.)*[A-Z][A-Za-z]*(?:Error|Exception)): "
    r"(?P<msg>\S[^\u3002]*?)(?:[\u3002\uff0e].*)?$"
)
#: One error of a server's pydantic validation list, as a client prints it after its own
#: label (``validation error:``, then ``{'type': 'missing', 'loc': ('body',), ..}``).
_ERROR_DICT = re.compile(r"^\[?\{'type': '\w+', 'loc': \(.*'msg': ")
#: A framework's record of an exception it caught, typed (Langchain-Chatchat's
#: ``SyntaxError: Caught exception: invalid syntax ..``), and LibreChat's abort of a
#: request (``AI response error; aborting request: fetch failed``).
_CAUGHT = re.compile(r"\b(?P<type>[A-Z]\w*(?:Error|Exception)): Caught exception: (?P<msg>\S.*)$")
#: Xinference's record that a request ended with an error (``Leave chat, error: <error>,
#: elapsed time: 0 s``).
_LEFT_WITH_ERROR = re.compile(r"\bLeave \w+, error: (?P<msg>\S.*?), elapsed time: [\d.]+ s$")
_ABORTED = re.compile(r"\bAI response error; aborting request: (?P<msg>\S.*)$")
#: LiteLLM's exception mapping a provider's error, as a framework prints it
#: (``Exception litellm.APIError: APIError: Hosted_vllmException - Connection error``).
_LITELLM = re.compile(r"\blitellm\.\w+: (?:\w+: )?[A-Z]\w*Exception - (?P<msg>\S.*)$")
#: The OpenAI client before 1.0 quoting a body that a paste broke over the lines below
#: (``Invalid response object from API:``, then ``'{"object":"error","message":"..``).
_BODY_BELOW = re.compile(r"\b(?P<msg>Invalid response object from API:)\s*$")
#: A serving platform's runner that gave up on the process it started (Modal's ``Runner
#: failed with exception: Runner has been initializing for too long: 300 seconds``), and
#: vllm-omni's record of a stage's error on a request (``Stage 0 error on request <id>:
#: list index out of range``): the error after their words.
_RUNNER_FAILED = re.compile(r"^`?Runner failed with exception: (?P<msg>\S.*?)`?$")
#: An exception as its repr prints it (``RuntimeError('Cannot find any model weights')``).
_EXCEPTION_REPR = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception))\((?P<q>['\"])(?P<msg>.*)(?P=q)\)$"
)
_STAGE_ERROR = re.compile(r"\bStage \d+ error on request \S+: (?P<msg>\S.*)$")
#: vLLM's server's record that the chat template could not be applied to a request, the
#: error after its words (a pydantic validation of the messages, the template's refusal).
_CHAT_TEMPLATE = re.compile(r"^Error in applying chat template from request: (?P<msg>\S.*)$")
#: pytest's short summary of a failed test (``FAILED tests/x.py::test_y[p] - AssertionError:
#: ..``): the test's error, typed; the frame that raised it is not in view.
_PYTEST_SUMMARY = re.compile(
    r"^(?:FAILED |ERROR )?\S+\.py::[^\s\[]+(?:\[[^\]]*\])? - "
    r"(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (?P<msg>\S.*)$"
)
#: The C++ runtime's report of an exception nothing caught (``terminate called after
#: throwing an instance of 'std::length_error'``), its ``what():`` on the next line: that
#: exception, typed, before the abort it causes.
_TERMINATE = re.compile(
    r"^terminate called after throwing an instance of '(?P<type>[A-Za-z_][\w:]*)'$"
)
#: browser-use's record that the agent's step failed, the error on the next line
#: (``❌ Result failed 1/3 times:``, then `` Internal Server Error``).
_STEP_FAILED = re.compile(r"\bResult failed \d+/\d+ times:\s*(?P<msg>.*)$")
#: Errors printed (or quoted) alone on their line without their type: vLLM's KV-cache
#: check, a missing module, a compiled extension's unresolved symbol.
_UNTYPED: tuple[re.Pattern[str], ...] = (
    re.compile(
        r"^The model's max seq len \(\d+\) is larger than the maximum number of tokens that "
        r"can be stored in KV cache"
    ),
    re.compile(r"^No available memory for the cache blocks\b"),
    re.compile(r"^Free memory on device \(.*\) on startup is less than desired GPU memory"),
    re.compile(r"^No module named '[\w.]+'$"),
    re.compile(r"^'[\w.]+' object has no attribute '\w+'$"),
    re.compile(r"^'NoneType' object is not (?:iterable|subscriptable|callable)$"),
    re.compile(r"^\S+\.so(?:\.[\d.]+)?: undefined symbol: \S+$"),
    re.compile(r"^\w+ is set to -?\d+, which does not allow any tokens to be scheduled"),
    # an argument error pasted without its type (``EngineArgs.__init__() got an
    # unexpected keyword argument 'task'``)
    re.compile(
        r"^[\w.]+\(\) (?:got an unexpected keyword argument|got multiple values for "
        r"(?:keyword )?argument|missing \d+ required \w+ arguments?:|takes (?:from \d+ to )?"
        r"\d+ positional arguments? but) "
    ),
    # a device kernel's assertion, as the CUDA runtime prints it
    re.compile(r"Assertion `.+` failed\.?$"),
)
#: Ray's advice at the end of its out-of-memory report, the only line of it a truncated
#: job log may keep.
_RAY_OOM_ADVICE = re.compile(
    r"^(?P<msg>Refer to the documentation on how to address the out of memory issue: \S+)"
)
#: A serving wrapper's own record that the server it started failed to come up
#: (``[Error] (WrappedServer) vllm-server failed to start within timeout``, InstructLab's
#: ``vLLM failed to start.  Retry with --enable-serving-output ..``).
_WRAPPER_GAVE_UP = re.compile(
    r"^\[(?:Error|ERROR|error)\] \((?P<proc>[A-Za-z]\w+)\) "
    r"(?P<msg>\S.*\bfailed to (?:start|launch|load|initiali[sz]e)\b.*)$"
)
_VLLM_GAVE_UP = re.compile(
    r"^(?P<msg>(?:vLLM|vllm)(?:[- ]server)? failed to (?:start|launch)\b.*)$"
)
#: A typed error a line quotes in parentheses at its end (``'vllm.entrypoints.openai.
#: api_server' (ModuleNotFoundError: No module named 'vllm')``).
_PARENTHESISED = re.compile(
    r"\((?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>[^()]*(?:\([^()]*\)[^()]*)*)\)\s*$"
)
#: An exception line the user put in quotes (``"ImportError: .. undefined symbol: .."``).
_QUOTED_LINE = re.compile(r'^["“](?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>.+?)["”]$')
_QUOTED_ARGS = re.compile(
    r'^["“](?P<msg>[\w.]+\(\) (?:got an unexpected keyword argument|got multiple values for'
    r"|missing \d+ required|takes \d+ positional) .+?)\s*[\"”]$"
)
#: An error record saying a server or model failed to start or load, and why.
_FAILED = re.compile(
    r"^(?:Failed to (?:start|launch|load|serve|initialize)|Could not (?:start|load)"
    r"|Unable to (?:start|load))\b[^:]*: \S"
)
#: A failure phrase in Chinese (``模型加载失败: <reason>``: "model loading failed").
_LOCALIZED = re.compile(r"^[^\x00-\x7f]*(?:失败|错误)[:：] ?(?P<msg>\S.*)$")
#: An error quoted as one escaped string (``"..\\n  At least one ..:\\nray.exceptions.
#: RaySystemError: System error: .."``: Triton, JSON logs): its last line is the error.
_ESCAPED_EXC = re.compile(r'^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>.+?)"?$')
#: A frame of a traceback escaped into one string (``File \\"/x.py\\", line 3, in f``).
_ESCAPED_FRAME = re.compile(r'^File \\?"(?P<file>[^"\\]+)\\?", line \d+, in (?P<func>[\w<>.]+)')
_ESCAPED_COLOUR = re.compile(r"\\u001[Bb](?:\[[0-9;]*m)?")  # its "[36m" may be gone
_RAY_ACTOR = re.compile(r"ray::(?P<actor>\w+)\.[\w.]+\(\)\s*\(pid=(?P<pid>\w+)")
#: A pydantic v2 validation error's own line (``Value error, <msg> [type=value_error,
#: input_value=..]``, the ``[type=..]`` part also on a later line or cut) without the
#: header line that names the error: a paste that kept only the body.
_PYDANTIC_LINE = re.compile(r"^(?:Value|Assertion) error, [A-Z`'\"]")
PYDANTIC_ERROR = "pydantic_core._pydantic_core.ValidationError"
#: An error quoted in backticks inside a sentence: typed, or Python's own untyped
#: argument error (the closing backtick may be cut with the paste).
_BACKTICK_TYPED = re.compile(
    r"`(?P<q>\")?(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>[^`]+?)"
    # double quotes inside the backticks (```"RuntimeError: .."` ``) are the user's
    r"(?(q)\"?)(?:`|$)"
)
_BACKTICK_ARGS = re.compile(
    r"`(?P<msg>[\w.]+\(\) (?:got an unexpected keyword argument|missing \d+ required"
    r"(?: positional| keyword-only)? arguments?:|takes \d+ positional arguments? but)"
    r" [^`]+?)(?:`|$)"
)
#: pip's resolver giving up (the ``ResolutionImpossible`` line follows, naming no package),
#: or its report, after an install it went through with, of what now conflicts (its first
#: ``x requires y, but you have z`` line where the paste cut the report's header).
#: uv's resolver finding no set of versions that installs (``× No solution found when
#: resolving dependencies:``, its derivation on the ``╰─▶ Because ..`` lines below): the
#: error is its own first line.
_UV_UNSOLVABLE = re.compile(
    # after its spinner's last frame where a terminal's capture kept it on the line
    # (``⠴ Resolving dependencies...   × No solution found ..``)
    r"^(?:[⠀-⣿] Resolving dependencies\.\.\.\s+)?(?:×\s+)?"
    r"(?P<msg>No solution found when resolving\b.*)$"
)
_PIP_CONFLICT = re.compile(
    r"^(?:ERROR: )?(?P<msg>Cannot install .+? because these package versions have "
    r"conflicting dependencies\.|pip's dependency resolver does not currently take into "
    r"account all the packages that are installed\. This behaviour is the source of the "
    r"following dependency conflicts\.|[\w.-]+ [\w.+!*-]+ requires .+, but you have .+ which is "
    r"incompatible\.)"
)
#: An HTTP proxy's own answer that the server behind it did not take the connection
#: (Envoy's, in front of a Kubernetes deployment of vLLM).
_PROXY_UPSTREAM = re.compile(
    r"^(?P<msg>upstream connect error or disconnect/reset before headers\b.*)$"
)
#: A serving wrapper's record that the server process it started quit
#: (RamaLama's ``Server process exited unexpectedly with exit code 1``).
_SERVER_EXITED = re.compile(r"^(?P<msg>(?:The )?[Ss]erver process exited unexpectedly\b.*)$")
#: Docker's refusal to start a container or to build (``docker: Error response from
#: daemon: ..``; a build's without the program's name): the daemon's message goes on over
#: the next lines.
_DOCKER = re.compile(r"^(?:docker: )?(?P<msg>Error response from daemon: \S.*)$")
#: BuildKit's own error when it cannot run a step (``failed to build: failed to solve:
#: failed to compute cache key: .. not found``); a step that ran and failed (``process
#: "/bin/sh -c .." did not complete successfully``) only reports the step's error above.
_BUILDKIT = re.compile(r"^(?P<msg>failed to (?:build: failed to )?solve: (?!process \").*\S)$")
#: The same answer relayed inside a platform's own words (OCI Data Science's ``Errors
#: occurred while bootstrapping the Model Deployment: Start Container Error: ..: Error
#: response from daemon: ..``).
_DOCKER_RELAYED = re.compile(r"^\S.*?: (?P<msg>Error response from daemon: \S.*)$")
#: CMake's error, its message on the indented lines under it (``CMake Error at
#: CMakeLists.txt:108 (message):``, then ``  Can't find CUDA or HIP installation.``).
_CMAKE = re.compile(r"^CMake Error(?: at \S+:\d+ \([\w ]+\))?:\s*(?P<msg>.*)$")
#: Docker Compose's record that a service's container never became healthy or exited
#: (``container vllm-service exited (1)``), and gcloud's
#: that a Cloud Run container did not start (``ERROR: (gcloud.run.deploy) The
#: user-provided container failed to start ..``): the process is the command it names.
_COMPOSE_NOT_STARTED = re.compile(
    r"^[\"“]?(?P<msg>dependency failed to start: container \S+ (?:is unhealthy|exited \(\d+\)))"
    r"[\"”]?$"
)
_GCLOUD = re.compile(r"^(?:ERROR: )?\((?P<proc>gcloud[\w.-]*)\) (?P<msg>\S.*)$")
#: A serving platform's record that its model server did not start, and why (KServe's
#: ``Failed to start model server: <error>``).
_SERVER_NOT_STARTED = re.compile(r"^Failed to start (?:the )?model server: (?P<msg>\S.*)$")
#: An application's error record relaying what its API client raised (``OpenAI API error:
#: Connection error.``, loguru's ``| ERROR | app.llm:ask:432 - API error: ..``).
_API_ERROR = re.compile(r"(?:^|\s)(?:[A-Z]\w* )?API error: (?!Error code: )(?P<msg>[A-Z]\S.*)$")
#: transformers' lazy import relaying what failed, nested as often as modules import
#: each other (``Failed to import X because of the following error (look up to see its
#: traceback): Failed to import Y because of ..: <error>``): the innermost is the error.
LAZY_IMPORT_MARK = r"because of the following error \(look up to see its traceback\):"
_LAZY_IMPORT = re.compile(rf"{LAZY_IMPORT_MARK}\s*(?P<msg>\S(?:(?!look up to see).)*)$")
#: A CUDA call's check in compiled code, by file and line (vLLM's custom all-reduce:
#: ``Failed: Cuda error /x/csrc/custom_all_reduce.cuh:417 'resource already mapped'``).
_CUDA_CHECK = re.compile(r"^Failed: (?:Cuda|CUDA|HIP) error \S+:\d+ '[^']+'")
#: A compiler's diagnostic (``/opt/rocm/include/hip/hip_bf16.h:30:10: fatal error:
#: 'hip/amd_detail/amd_hip_bf16.h' file not found``): its message after the severity.
#: gcc's ``fatal error: infiniband/mlx5dv.h: No such file or directory`` is the same where
#: the paste lost the place before it.
_COMPILER_ERROR = re.compile(r"^(?:\S+\.\w+:\d+:\d+: (?:fatal )?error|fatal error): (?P<msg>\S.*)$")
#: A build tool's own error line (``ninja: error: '/opt/rocm/lib/libamdhip64.so', needed by
#: '..', missing and no known rule to make it``): the tool is the process.
_BUILD_TOOL = re.compile(
    r"^(?P<prog>ninja|make|cmake|gmake): (?:\*\*\* )?(?:error|Error): (?P<msg>\S.*)$"
)
#: Python's argument error without its type, as a line ends with it.
_ARGS = re.compile(
    r"(?P<msg>[\w.]+\(\) (?:got an unexpected keyword argument|got multiple values for"
    r"|missing \d+ required|takes \d+ positional) .+?)[\"']?\s*$"
)
_QUOTE_END = re.compile(r"""["']+\s*$""")


@dataclass(frozen=True)
class Relay:
    line: int
    process: str
    type: str
    message: str
    own: bool = False  # the error's own words (a quote in prose, pip's): not a relay
    #: the relaying line's own words around the error (``Failed to import python 'vllm'
    #: module. Are we running in the correct venv?``): what it says may name whose it is
    context: str = ""
    pip: bool = False  # pip's resolver refusing an install (its causes follow)
    #: the error's own frames where the relaying line quotes them ((file, function),
    #: outermost first): Triton's Python stub appends ``At:`` and pybind11's frames
    frames: tuple[tuple[str, str], ...] = ()
    #: the relaying line is a warning record (vLLM's note that an import failed): the run
    #: went on, so a traceback after it that the paste cut is where it ended
    warning: bool = False
    #: the error's message goes on over the lines that follow (Docker's daemon answer, a
    #: pydantic message until its ``[type=..]``)
    continues: bool = False
    #: a client's record of the error an HTTP server answered (a status, a body): the
    #: server's own record of it, where the log has one, is the error itself
    http: bool = False
    #: the body the relay quotes is on the lines below it, broken over them: it is read
    #: once it closes
    body: bool = False
    #: the line is a pretty-printed body's ``"message"`` line: its ``"type"`` line, a line
    #: or two below, types it
    typed_below: bool = False


#: One frame as pybind11 lists it after ``At:`` (innermost first): ``path(line): func``.
_AT_FRAME = re.compile(r"^\s*(?P<file>\S.*?)\((?P<line>\d+)\): (?P<func>[\w<>.]+)\s*$")


def _escaped_frames(msg: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A quoted error's message without what follows its escaped line breaks, and the
    frames an ``At:`` block there lists (outermost first); the message unchanged where
    it has no escaped line break."""
    if "\\n" not in msg:
        return msg, ()
    parts = msg.split("\\n")
    frames: list[tuple[str, str]] = []
    if "At:" in (p.strip() for p in parts):
        start = [p.strip() for p in parts].index("At:") + 1
        for p in parts[start:]:
            f = _AT_FRAME.match(p)
            if f:
                frames.append((f["file"], f["func"]))
    return parts[0].rstrip(), tuple(reversed(frames))


def classify(line: Line, error_record: bool) -> Relay | None:
    """The error ``line`` relays, or None. ``error_record``: the line is an error-level
    log record (an untyped reason is taken only from one)."""
    text = line.text.strip()
    if len(text) < 12 or len(text) > 4000:
        return None
    for read in _READERS:
        relay = read(line, text, error_record)
        if relay is not None:
            body = httperrors.quoted_body(relay.message) if relay.type else None
            if body is not None:
                # a client's exception quoted whole (``openai.APIStatusError: Error code:
                # 405 - {'detail': ..}``): the server's error its body holds
                relay = dataclasses.replace(
                    relay, type=body[0], message=body[1], own=False, http=True
                )
            if line.level == "WARNING":
                return dataclasses.replace(relay, warning=True)
            return relay
    return None


_Reader = Callable[[Line, str, bool], "Relay | None"]


def _escaped(line: Line, text: str, error_record: bool) -> Relay | None:
    if "\\n" not in text:
        return None
    parts = _ESCAPED_COLOUR.sub("", text).split("\\n")
    if len(parts) < 2:
        return None
    e = _ESCAPED_EXC.match(parts[-1].strip())
    if e:
        actor = _RAY_ACTOR.search(parts[0])
        proc = f"{actor['actor']} pid={actor['pid']}" if actor else line.process
        frames = tuple(
            (f["file"], f["func"]) for p in parts if (f := _ESCAPED_FRAME.match(p.strip()))
        )
        if frames and not httperrors.SAYS_WHAT_FAILED.search(parts[0]):
            # a traceback escaped into one string, nothing relaying it: its own frames
            return Relay(line.number, proc, e["type"], e["msg"], own=True, frames=frames)
        return Relay(line.number, proc, e["type"], e["msg"])
    a = _ARGS.match(parts[-1].strip())
    if a:  # a framework's message quoting Python's argument error without its type
        return Relay(line.number, line.process, "", a["msg"], context=parts[0])
    return None


def _backticked(line: Line, text: str, error_record: bool) -> Relay | None:
    q = _BACKTICK_TYPED.search(text) or _BACKTICK_ARGS.search(text)
    if q is None:
        return None
    typ = q["type"] if "type" in q.groupdict() else ""
    return Relay(line.number, line.process, typ, q["msg"].strip(), own=True)


def lazy_import_error(text: str) -> tuple[str, str] | None:
    """(type, message) of the innermost error transformers' nested lazy import relays in
    ``text`` (the type empty where the error names none), or None: no such relay, or one
    whose innermost error is not in ``text``."""
    z = _LAZY_IMPORT.search(text) if "look up to see its traceback" in text else None
    if z is None or "because of the following error" in z["msg"]:
        return None
    typed = TYPED_WORDS.match(z["msg"])
    return (typed["type"], typed["msg"]) if typed else ("", z["msg"])


def _lazy_import(line: Line, text: str, error_record: bool) -> Relay | None:
    said = lazy_import_error(text)
    return Relay(line.number, line.process, *said) if said else None


def _pip(line: Line, text: str, error_record: bool) -> Relay | None:
    p = _PIP_CONFLICT.match(text)
    if p:
        return Relay(line.number, line.process, "", p["msg"], own=True, pip=True)
    u = _UV_UNSOLVABLE.match(text)
    return Relay(line.number, line.process, "", u["msg"], own=True) if u else None


def _gave_up(line: Line, text: str, error_record: bool) -> Relay | None:
    g = _WRAPPER_GAVE_UP.match(text)
    if g:
        return Relay(line.number, g["proc"], "", g["msg"])
    w = _SERVER_EXITED.match(text) or _PROXY_UPSTREAM.match(text)
    if w:
        return Relay(line.number, line.process, "", w["msg"])
    started = _SERVER_NOT_STARTED.match(text)
    if started:
        return Relay(
            line.number, line.process, "", started["msg"], context=text[: started.start("msg")]
        )
    api = _API_ERROR.search(text) if "API error: " in text else None
    if api:
        return Relay(line.number, line.process, "", api["msg"])
    c = _COMPOSE_NOT_STARTED.match(text)
    if c:
        return Relay(line.number, line.process, "", c["msg"])
    g = _GCLOUD.match(text)
    if g:
        return Relay(line.number, g["proc"], "", g["msg"])
    b = _BUILD_TOOL.match(text)
    if b:
        return Relay(line.number, b["prog"], "", b["msg"], own=True)
    check = _CUDA_CHECK.match(text)
    if check:  # its words end at the quote (a lost line break may glue the crash on)
        return Relay(line.number, line.process, "", check.group(), own=True)
    cc = _COMPILER_ERROR.match(text)
    if cc:
        return Relay(line.number, line.process, "", cc["msg"], own=True)
    d = _DOCKER.match(text)
    if d:
        return Relay(line.number, "docker", "", d["msg"], own=True, continues=True)
    k = _BUILDKIT.match(text)
    if k:
        return Relay(line.number, "docker", "", k["msg"], own=True)
    d = _DOCKER_RELAYED.match(text) if "daemon: " in text else None
    if d:
        return Relay(line.number, "docker", "", d["msg"])
    m = _CMAKE.match(text)
    if m:
        return Relay(line.number, "cmake", "", m["msg"], own=True, continues=not m["msg"])
    v = _VLLM_GAVE_UP.match(text)
    return Relay(line.number, line.process, "", v["msg"]) if v else None


def _native_record(line: Line, text: str, error_record: bool) -> Relay | None:
    """A C++ library's own error record (Ray's ``[.. E 13261 13261] core_worker.cc:228:
    Failed to register worker .. IOError: ..``): its words are its own error, whatever
    status name they quote."""
    record = line.record or ""
    if (
        error_record
        and re.search(r"\.(?:cc|cpp|cxx):\d+", record)
        and httperrors.SAYS_WHAT_FAILED.search(text)
    ):
        return Relay(line.number, line.process, "", text, own=True)
    return None


def _relayed_untyped(line: Line, text: str, error_record: bool) -> Relay | None:
    a = _RELAYED_ARGS.search(text) or _MODEL_ACCESS.search(text)
    if a is None:
        return None
    return Relay(line.number, line.process, "", a["msg"], context=text[: a.start("msg")])


def _http_status(line: Line, text: str, error_record: bool) -> Relay | None:
    return _relay(line, httperrors.status(text))


def _program_error(line: Line, text: str, error_record: bool) -> Relay | None:
    e = _PROGRAM_ERROR.match(text)
    if e is None or httperrors.body(text) is not None:
        return None  # a client's ``Error: API error 400: {..}``: the body is the error
    return Relay(line.number, line.process, "", e["msg"], own=True)


def _repr(line: Line, text: str, error_record: bool) -> Relay | None:
    r = _REPR.search(text)
    return Relay(line.number, line.process, r["type"], r["msg"]) if r else None


def _repr_record(line: Line, text: str, error_record: bool) -> Relay | None:
    """An error record that is an exception's repr alone (vLLM's executor logging a
    worker's error: ``ERROR .. [multiproc_executor.py:852] ValueError("type fp8e4nv not
    supported ..")``): that exception's own line."""
    r = _EXCEPTION_REPR.match(text) if error_record else None
    return Relay(line.number, line.process, r["type"], r["msg"], own=True) if r else None


def _typed(line: Line, text: str, error_record: bool) -> Relay | None:
    m = _TYPED.search(text)
    if m is None:
        return None
    msg, frames = _escaped_frames(_QUOTE_END.sub("", m["msg"]))
    return Relay(
        line.number,
        line.process,
        m["type"],
        msg,
        context=text[: m.start("type")],
        frames=frames,
    )


def _context_length(line: Line, text: str, error_record: bool) -> Relay | None:
    return _relay(line, httperrors.context_length(text))


def _error_body(line: Line, text: str, error_record: bool) -> Relay | None:
    """An HTTP error body as a client or server logs it (see ``httperrors``), or a typed
    error a line quotes in parentheses at its end."""
    said = httperrors.body(text) or httperrors.typographic_body(text)
    if said is not None:
        return _relay(line, said)
    q = _PARENTHESISED.search(text)
    if q:
        return Relay(line.number, line.process, q["type"], q["msg"].strip())
    said = httperrors.body_text(text)
    if said is not None and said[2] and httperrors.BODY_LINE.match(text):
        return Relay(line.number, line.process, "", said[1], own=True, typed_below=True)
    return _relay(line, said)


#: vLLM's server relaying what a method it called on the engine raised (``Call to
#: wake_up method failed: CUDA Error: out of memory ..``), as its error body says.
_METHOD_FAILED = re.compile(r"^Call to [\w.]+ method failed: (?P<msg>\S.*)$")


def _relay(line: Line, said: httperrors.Said | None) -> Relay | None:
    if said is None:
        return None
    typ, message, own = said
    inner = _METHOD_FAILED.match(message)
    if inner is not None:  # the engine's error, which the server's words only relay
        typed = TYPED_WORDS.match(inner["msg"])
        typ, message = (typed["type"], typed["msg"]) if typed else ("", inner["msg"])
    return Relay(line.number, line.process, typ, message, own=own, http=not own)


def _pydantic(line: Line, text: str, error_record: bool) -> Relay | None:
    if _PYDANTIC_LINE.match(text):
        # a message pydantic prints over lines goes on until its ``[type=..]`` part
        return Relay(
            line.number, line.process, PYDANTIC_ERROR, text, continues="[type=" not in text
        )
    return None


def _labelled(line: Line, text: str, error_record: bool) -> Relay | None:
    """The error's own words behind a label or a sentence of the user's (``【BUG】：
    RuntimeError: ..``, ``It resulted in the error: ..``), or alone on its line, untyped,
    as vLLM and Python print them (``No module named 'x.y'``)."""
    lab = (
        _LABEL.match(text)
        or _QUOTED_LINE.match(text)
        or _CJK_TYPED.search(text)
        or _SENTENCE_TYPED.search(text)
        or _COMMA_TYPED.search(text)
        or _QUOTED_TYPED.search(text)
        or _RAISE_GLUED.match(text)
        or _LOWER_TYPED.match(text)
    )
    if lab:
        return Relay(line.number, line.process, lab["type"], lab["msg"], own=True)
    c_assert = _C_ASSERT.match(text)
    if c_assert:
        context = text[: c_assert.start("msg")]
        return Relay(line.number, line.process, "", c_assert["msg"], own=True, context=context)
    quoted_args = _QUOTED_ARGS.match(text)
    if quoted_args:
        return Relay(line.number, line.process, "", quoted_args["msg"], own=True)
    prose = _PROSE_ERROR.search(text)
    if prose:
        said = prose["msg"].strip()
        if any(q in text[prose.start() : prose.start("msg")] for q in '`"“'):  # quoted
            said = said.rstrip('`"”')
        typed = TYPED_WORDS.match(said)
        if typed:  # ``which throws error: ValueError: ..``: the type is the error's own
            return Relay(line.number, line.process, typed["type"], typed["msg"], own=True)
        return Relay(line.number, line.process, "", said, own=True)
    if any(u.search(text) for u in _UNTYPED):
        return Relay(line.number, line.process, "", text, own=True)
    return None


def _error_dict(line: Line, text: str, error_record: bool) -> Relay | None:
    return Relay(line.number, line.process, "", text) if _ERROR_DICT.match(text) else None


def _framework_relay(line: Line, text: str, error_record: bool) -> Relay | None:
    """A framework's record of an error it caught (Chatchat's ``Caught exception:``), a
    request it aborted (LibreChat's) or left with an error (Xinference's), or a provider's
    error it mapped (LiteLLM's, where no HTTP body in the line is read as one)."""
    c = _CAUGHT.search(text)
    if c:
        return Relay(line.number, line.process, c["type"], c["msg"])
    left = _LEFT_WITH_ERROR.search(text)
    if left:
        return Relay(line.number, line.process, "", left["msg"])
    a = _ABORTED.search(text)
    if a is None and httperrors.body(text) is None:  # a body in it is read as one
        a = _LITELLM.search(text)
    return Relay(line.number, line.process, "", a["msg"]) if a else None


def _step_failed(line: Line, text: str, error_record: bool) -> Relay | None:
    """A framework's record that a step failed, its error on the next line: the relay
    takes that line as its message."""
    s = _STEP_FAILED.search(text)
    return Relay(line.number, line.process, "", s["msg"], continues=True) if s else None


def _body_below(line: Line, text: str, error_record: bool) -> Relay | None:
    b = _BODY_BELOW.search(text)
    if b is None:
        return None
    return Relay(line.number, line.process, "", b["msg"], continues=True, http=True, body=True)


def _runner_or_stage(line: Line, text: str, error_record: bool) -> Relay | None:
    r = _RUNNER_FAILED.match(text) or _STAGE_ERROR.search(text)
    if r is None:
        return None
    said = _EXCEPTION_REPR.match(r["msg"])  # ``RuntimeError('Cannot find ..')``: typed
    if said:
        return Relay(line.number, line.process, said["type"], said["msg"])
    return Relay(line.number, line.process, "", r["msg"])


def _chat_template(line: Line, text: str, error_record: bool) -> Relay | None:
    c = _CHAT_TEMPLATE.match(text) if error_record else None
    if c is None:
        return None
    return Relay(line.number, line.process, "", c["msg"], context=text[: c.start("msg")])


def _pytest_summary(line: Line, text: str, error_record: bool) -> Relay | None:
    p = _PYTEST_SUMMARY.match(text)
    return Relay(line.number, line.process, p["type"], p["msg"], own=True) if p else None


def _terminate(line: Line, text: str, error_record: bool) -> Relay | None:
    t = _TERMINATE.match(text)
    if t is None:
        return None
    return Relay(line.number, line.process, t["type"], "", own=True, continues=True)


def _ray_oom(line: Line, text: str, error_record: bool) -> Relay | None:
    o = _RAY_OOM_ADVICE.match(text)
    return Relay(line.number, line.process, "", o["msg"]) if o else None


def _localized(line: Line, text: str, error_record: bool) -> Relay | None:
    z = _LOCALIZED.match(text)
    return Relay(line.number, line.process, "", z["msg"]) if z else None


def _failed_record(line: Line, text: str, error_record: bool) -> Relay | None:
    if error_record and _FAILED.match(text):
        return Relay(line.number, line.process, "", text)
    return None


_READERS: tuple[_Reader, ...] = (
    _lazy_import,
    _escaped,
    _backticked,
    _pip,
    _framework_relay,
    _gave_up,
    _native_record,
    _relayed_untyped,
    _http_status,
    _program_error,
    _repr,
    _repr_record,
    _typed,
    _context_length,
    _error_body,
    _pydantic,
    _labelled,
    _error_dict,
    _step_failed,
    _body_below,
    _runner_or_stage,
    _chat_template,
    _pytest_summary,
    _terminate,
    _ray_oom,
    _localized,
    _failed_record,
)
