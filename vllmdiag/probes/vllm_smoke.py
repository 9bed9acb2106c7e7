"""Start a vLLM engine with the given engine flags and generate a few tokens.

Run by a leg's own python. It parses the flags with vLLM's own ``EngineArgs`` parser
(the same one ``vllm bench throughput`` uses), so every engine flag an arm adds is
accepted or rejected exactly as the leg's CLI would, then builds the engine the way that
leg's own ``vllm bench throughput`` does (``LLM.from_engine_args`` where vLLM has it,
0.26 and later; ``LLM(**dataclasses.asdict(engine_args))`` before, as 0.18 does: the
latter fails on 0.26, whose config types no longer round-trip through ``asdict``) and
generates from a short text prompt. Exit 0 means the engine started and generated.
"""

import dataclasses
import sys
import time


def parser():
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older vLLM
        from vllm.utils import FlexibleArgumentParser
    from vllm.engine.arg_utils import EngineArgs

    p = FlexibleArgumentParser(description="vllmdiag smoke check")
    p.add_argument("--prompt", default="The capital of France is")
    p.add_argument("--max-tokens", type=int, default=8)
    p.add_argument(
        "--no-generate",
        action="store_true",
        help="only start the engine (models that need non-text inputs)",
    )
    return EngineArgs.add_cli_args(p)


def build(llm_class, engine_args):
    """The engine, built as the leg's own benchmark entry point builds it."""
    from_engine_args = getattr(llm_class, "from_engine_args", None)
    if from_engine_args is not None:
        return from_engine_args(engine_args)
    return llm_class(**dataclasses.asdict(engine_args))


def main():
    from vllm import LLM, SamplingParams
    from vllm.engine.arg_utils import EngineArgs

    args = parser().parse_args()
    engine_args = EngineArgs.from_cli_args(args)
    start = time.monotonic()
    llm = build(LLM, engine_args)
    print(f"vllmdiag-smoke: engine started in {time.monotonic() - start:.1f}s", flush=True)
    if args.no_generate:
        return 0
    out = llm.generate([args.prompt], SamplingParams(max_tokens=args.max_tokens, temperature=0))
    tokens = len(out[0].outputs[0].token_ids) if out and out[0].outputs else 0
    print(f"vllmdiag-smoke: generated {tokens} tokens: {out[0].outputs[0].text!r}", flush=True)
    return 0 if tokens > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
