"""The kinetic command line (typer). Exit codes: 0 success, 1 the command failed, 2 a bad command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from kinetic import __version__
from kinetic.cli.links import as_kinetic
from kinetic.cli.llama_flags import RefusedFlag, translate
from kinetic.cli.options import (ANSWER, CACHE, GENERATION, GPU_MEMORY, N_PREDICT, RECEIPTS, RUNTIME, SIGN_KEY,
                                 cache_types, gpu_layers, speed_names, with_options)
from kinetic.cli.usage import UsageError
from kinetic.errors import KineticError
from kinetic.stores import resolve_model

app = typer.Typer(
    name="kinetic",
    help="Kinetic: run GGUF models locally, faster than llama.cpp without changing the answer.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
MODEL_HELP = "A model file (.gguf, .ktc), or a model's name (kinetic models lists them)."
MODEL_OPTION_HELP = "The model, as llama.cpp takes it."


def _print_version(value: bool) -> None:
    if value:
        print(f"kinetic {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", help="Print the version and exit.",
                                 callback=_print_version, is_eager=True),
) -> None:
    """Kinetic: run GGUF models locally."""
    from kinetic import progress

    progress.show_on_terminal()


@app.command()
def info(
    model: Optional[Path] = typer.Argument(None, help=MODEL_HELP, show_default=False),
    model_option: Optional[Path] = typer.Option(None, "-m", "--model", help=MODEL_OPTION_HELP),
) -> None:
    """Show what a model file contains and whether Kinetic supports it (reads only the header)."""
    from kinetic.cli.info import info_lines

    print("\n".join(info_lines(_one_model(model, model_option))))


@app.command()
@with_options(ANSWER, GENERATION, RUNTIME, RECEIPTS)
def run(
    words: Optional[list[str]] = typer.Argument(None, metavar="[MODEL] [PROMPT]", show_default=False,
                                                help="The model file (or name), then the prompt [default: stdin]."),
    model_option: Optional[Path] = typer.Option(None, "-m", "--model", help=MODEL_OPTION_HELP),
    prompt_option: Optional[str] = typer.Option(None, "-p", "--prompt", help="The prompt, as llama.cpp takes it."),
    options: dict = None,
) -> None:
    """Answer one prompt, streamed to stdout; the speed goes to stderr."""
    from kinetic.cli.run import run_command

    run_command(model_option, words or [], prompt_option, options)


@app.command()
@with_options(ANSWER, GENERATION, RUNTIME, [SIGN_KEY])
def chat(
    model: Optional[Path] = typer.Argument(None, help=MODEL_HELP, show_default=False),
    model_option: Optional[Path] = typer.Option(None, "-m", "--model", help=MODEL_OPTION_HELP),
    options: dict = None,
) -> None:
    """Chat in the terminal: one message per line, end a line with \\ to continue it; /help lists commands."""
    from kinetic.cli.chat import chat_command

    chat_command(_one_model(model, model_option), options)


@app.command()
@with_options(GENERATION, [N_PREDICT], RUNTIME, [SIGN_KEY])
def serve(
    model: Optional[Path] = typer.Argument(None, help=MODEL_HELP, show_default=False),
    model_option: Optional[Path] = typer.Option(None, "-m", "--model", help=MODEL_OPTION_HELP),
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on"),
    port: Optional[int] = typer.Option(None, "--port", show_default=False,
                                       help="port; 0 picks a free one [default: 8080, or 11434 with --ollama]"),
    ollama: bool = typer.Option(False, "--ollama", help="listen on Ollama's port, so apps made for Ollama work "
                                                        "unchanged"),
    alias: Optional[str] = typer.Option(None, "--alias", help="model name the API reports [default: the file's name]",
                                        show_default=False),
    api_key: Optional[str] = typer.Option(None, "--api-key", show_default=False,
                                          help="require Authorization: Bearer KEY (or X-Api-Key) on all but /health"),
    allowed_hosts: str = typer.Option("", "--allowed-hosts", metavar="NAMES", show_default=False,
                                      help="without --api-key, host names to answer besides localhost and --host, "
                                           "comma-separated"),
    parallel: Optional[int] = typer.Option(None, "-np", "--parallel", min=1, show_default=False,
                                           help="requests run at once, sharing passes [default: on the CPU as many "
                                                "full-context ones as half the free memory holds, up to 4]"),
    slots: bool = typer.Option(True, "--slots/--no-slots", help="serve /slots, as llama-server"),
    cors_origins: str = typer.Option("", "--cors-origins", metavar="ORIGINS", show_default=False,
                                     help="web pages of other sites allowed to use the server, comma-separated "
                                          "(https://app.example.com; localhost for this computer's) [default: none]"),
    cors_credentials: bool = typer.Option(True, "--cors-credentials/--no-cors-credentials",
                                          help="let the allowed pages send cookies and credentials"),
    options: dict = None,
) -> None:
    """Serve the OpenAI-, llama-server- and Ollama-compatible API at http://127.0.0.1:8080/v1 until Ctrl+C. The
    sampling flags and -n are the defaults of requests that do not set them, as in llama-server."""
    from kinetic.cli.serve import Listening, listen_port, serve_command

    listening = Listening(host, listen_port(port, ollama), api_key, allowed_hosts, slots, cors_origins,
                          cors_credentials)
    path = _one_model(model, model_option)
    named = model or model_option
    # a model run by name is served under that name (qwen3:4b, as Ollama's clients know it), not its file's
    serve_command(path, alias or (str(named) if path != named else None), parallel, listening, options)


@app.command()
@with_options(CACHE, [GPU_MEMORY])
def bench(
    model: Optional[Path] = typer.Argument(None, help=MODEL_HELP, show_default=False),
    model_option: Optional[Path] = typer.Option(None, "-m", "--model", help=MODEL_OPTION_HELP),
    repetitions: int = typer.Option(3, "-r", "--repetitions", help="runs of each test; the best is reported"),
    threads: Optional[int] = typer.Option(None, "-t", "--threads", help="CPU threads [default: all]",
                                          show_default=False),
    device: str = typer.Option("auto", "--device", help="the device to measure, as run's --device takes it"),
    layers: Optional[str] = typer.Option(None, "--gpu-layers", callback=gpu_layers, show_default=False,
                                         help="as run's --gpu-layers (llama.cpp's -ngl) takes it"),
    as_json: bool = typer.Option(False, "--json", help="print the results as one JSON object"),
    compare: Optional[str] = typer.Option(None, "--compare", metavar="[LLAMA_BENCH]",
                                          help="also run llama.cpp's llama-bench (on PATH, or this path)"),
    off: Optional[str] = typer.Option(None, "--off", callback=speed_names, show_default=False,
                                      help="speed technologies off, comma-separated: --off rad1 runs edit256 plainly"),
    options: dict = None,
) -> None:
    """Measure load time, prompt (pp512) and generation (tg128) speed and peak memory, as llama-bench does."""
    from kinetic.cli.bench import bench_command

    bench_command(_one_model(model, model_option), repetitions, threads, device, as_json, compare, off, layers,
                  cache_types(options), options["gpu_memory"])


@app.command()
def perplexity(
    model: Optional[Path] = typer.Argument(None, help=MODEL_HELP, show_default=False),
    text: Optional[Path] = typer.Argument(None, help="the text file to score (llama.cpp's -f)", show_default=False),
    model_option: Optional[Path] = typer.Option(None, "-m", "--model", help=MODEL_OPTION_HELP),
    text_option: Optional[Path] = typer.Option(None, "-f", "--file", help="the text file, as llama-perplexity's -f"),
    ctx_size: int = typer.Option(512, "-c", "--ctx-size", help="tokens per chunk"),
    chunks: Optional[int] = typer.Option(None, "--chunks", show_default=False, help="score at most this many chunks"),
    threads: Optional[int] = typer.Option(None, "-t", "--threads", help="CPU threads [default: all]",
                                          show_default=False),
    base_out: Optional[Path] = typer.Option(None, "--kl-divergence-base", show_default=False,
                                            help="save the log-probabilities to FILE, in llama-perplexity's format"),
    base_in: Optional[Path] = typer.Option(None, "--kl-divergence", show_default=False,
                                           help="compare with a base FILE from either tool, on its tokens"),
) -> None:
    """Score a text as llama-perplexity does: chunks of -c tokens, the second half of each; or the KL divergence
    from a base file's log-probabilities. Runs on the CPU."""
    from kinetic.cli.perplexity import perplexity_command

    if text is not None and text_option is not None:
        raise UsageError("give the text once: as an argument or with -f, not both")
    perplexity_command(_one_model(model, model_option), text or text_option, ctx_size, chunks, threads, base_out,
                       base_in)


@app.command()
def verify(model: Path = typer.Argument(..., help="the .ktc file")) -> None:
    """Recompute the BLAKE3 hash of every section of a .ktc file and check its signature; exit 1 when anything
    does not match."""
    from kinetic.cli.ktc import verify_command

    raise typer.Exit(verify_command(model))


@app.command()
def convert(
    model: Path = typer.Argument(..., help=MODEL_HELP),
    out: Path = typer.Argument(..., help="the .ktc file to write"),
    sign_key: Optional[Path] = typer.Option(None, "--sign-key", help="sign it with this Ed25519 secret key (32 bytes, "
                                                                     "or 64 hex digits)"),
    device: str = typer.Option("auto", "--device", help="the device whose execution profile it records"),
) -> None:
    """Write a .ktc file (docs/FORMAT.md): the model's weights, tokenizer, chat template and the execution profile
    of the device it runs on here, every section hashed, optionally signed."""
    from kinetic.cli.ktc import convert_command

    convert_command(resolve_model(model), out, sign_key, device)


@app.command()
def quantize(
    model: Path = typer.Argument(..., help="the GGUF model (F32, F16, BF16 or Q8_0 weights)"),
    out: Path = typer.Argument(..., help="the GGUF file to write"),
    file_type: str = typer.Argument(..., metavar="TYPE", help="Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0 or F16"),
    threads: Optional[int] = typer.Option(None, "-t", "--threads", min=1, help="threads [default: all]"),
) -> None:
    """Write a GGUF model in another type, as llama-quantize does: byte for byte its file without an importance
    matrix."""
    from kinetic.cli.quantize import quantize_command

    quantize_command(resolve_model(model), out, file_type, threads)


@app.command("verify-receipt")
def verify_receipt(
    receipt: Path = typer.Argument(..., help="the receipt (kinetic run --receipt)"),
    model: Optional[Path] = typer.Option(None, "--model", help="the model file, where it moved since"),
    device: Optional[str] = typer.Option(None, "--device", help="rerun on this device [default: the receipt's]"),
) -> None:
    """Check a receipt's hashes and signature, rerun its prompt alone with every speed technology off, and say
    whether every output token is the same; exit 1 on any difference."""
    from kinetic.cli.receipts import verify_command

    raise typer.Exit(verify_command(receipt, model, device))


@app.command()
def link(folder: Path = typer.Argument(..., help="a folder on PATH, e.g. ~/.local/bin")) -> None:
    """Make llama-server, llama-cli and llama-completion in FOLDER, links to kinetic that run as kinetic serve,
    chat (run with -p) and run, for apps that start llama.cpp's binaries by name."""
    from kinetic.cli.links import make_links

    for made in make_links(folder):
        print(f"{made} -> {made.resolve()}")


@app.command()
def pull(
    repository: str = typer.Argument(..., metavar="ORG/REPO[:QUANT]", show_default=False,
                                     help="a Hugging Face repository, and the quantization to take from it"),
    file: Optional[str] = typer.Option(None, "--file", metavar="NAME", show_default=False,
                                       help="one file of the repository, by its name there (a split model's "
                                            "parts all come)"),
    no_mmproj: bool = typer.Option(False, "--no-mmproj", help="leave the repository's vision projector out"),
    folder: Optional[Path] = typer.Option(None, "--dir", show_default=False,
                                          help="where models go, as <dir>/<org>/<repo>/ [default: Kinetic's "
                                               "models folder]"),
) -> None:
    """Download a GGUF model from Hugging Face (HF_TOKEN, HF_ENDPOINT) and print the name to run it by; without
    :QUANT, the largest of Q4_K_M, Q5_K_M, Q6_K and Q8_0 that fits. The only command that uses the network."""
    from kinetic.cli.pull import pull_command

    pull_command(repository, file, no_mmproj, folder)


@app.command()
def models() -> None:
    """List the GGUF models on this computer: Kinetic's folder, Ollama's, LM Studio's, the Hugging Face and
    llama.cpp caches (reads only headers). Every command takes a model's name in place of its file."""
    from kinetic.cli.models import models_lines

    for line in models_lines():
        print(line, flush=True)


@app.command()
def fit(
    target: Optional[str] = typer.Argument(None, metavar="[MODEL|FOLDER]", show_default=False,
                                           help="a model's file or name, or a folder of models [default: every "
                                                "model kinetic models lists]"),
) -> None:
    """Show where each model would run (GPU, GPU with experts on the CPU, or CPU) and the decode speed to
    expect from the bytes a token reads and the memory's speed; kinetic bench measures the real one."""
    from kinetic.cli.fit import fit_lines

    for line in fit_lines(target):
        print(line, flush=True)


@app.command()
def doctor() -> None:
    """Check the CPU, memory, GPUs, plugins and disk, and say what to fix."""
    from kinetic.cli.doctor import doctor_lines

    for line in doctor_lines():
        print(line, flush=True)


def _one_model(positional: Optional[Path], option: Optional[Path]) -> Path:
    if positional and option:
        raise UsageError("give the model once: as the first argument or with -m, not both")
    if not (positional or option):
        raise UsageError("missing the model: give a .gguf file as the first argument or with -m")
    return resolve_model(positional or option)


def main(argv: Optional[list[str]] = None, program: Optional[str] = None) -> int:
    """Run the command line; errors become one line on stderr and the exit code. program: the name it runs
    under (sys.argv[0]), which makes a copy named llama-server run as `kinetic serve` (links.as_kinetic)."""
    given = sys.argv[1:] if argv is None else argv
    try:
        args = bare_compare(translate(as_kinetic(program or sys.argv[0], given), command_options()))
    except RefusedFlag as refused:
        print(f"kinetic: {refused}", file=sys.stderr)
        return 2
    try:
        code = app(args=args, prog_name="kinetic", standalone_mode=False)
    except UsageError as error:
        return _usage_error(error)
    except KineticError as error:
        print(f"kinetic: {error}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, typer.Abort):
        return 130
    except typer.Exit as done:
        return done.exit_code
    return code if isinstance(code, int) else 0  # typer turns Ctrl+C into 130 returned, not raised


def command_options() -> dict[str, dict[str, bool]]:
    """Each command's option spellings, --help included, and whether each takes a value."""
    group = typer.main.get_command(app)
    options = {}
    for name, command in group.commands.items():
        params = command.get_params(typer.Context(command))
        options[name] = {spelling: not param.is_flag and not param.count for param in params
                         if param.param_type_name == "option" for spelling in param.opts + param.secondary_opts}
    return options


def bare_compare(args: list[str]) -> list[str]:
    """`bench --compare` takes an optional path: alone (last, or before another flag) it means search for it."""
    return [arg + "=" if arg == "--compare" and (i + 1 == len(args) or args[i + 1].startswith("-")) else arg
            for i, arg in enumerate(args)]


def _usage_error(error) -> int:
    """One line saying what is wrong and where the help is; exit code 2."""
    if type(error).__name__ == "NoArgsIsHelpError":  # bare `kinetic` or a command without arguments
        print(error.ctx.get_help(), file=sys.stderr)
        return 2
    command = error.ctx.command_path if error.ctx else "kinetic"
    print(f"{command}: {error.format_message().rstrip('.')} (see {command} --help)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
