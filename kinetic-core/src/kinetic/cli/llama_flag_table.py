"""Every flag llama-server and llama-cli (llama.cpp 11434) list, and what Kinetic does with it: takes it under
its own name (RENAMED), accepts it as not needed (ACCEPTED), accepts it for some values only (ACCEPTED_IF),
or refuses it with the one line saying what to use (REFUSED, and per command REFUSED_IN). The first rows of
each are the reference docs' "llama.cpp flags" table; the rest cover the two tools' --help. A flag that is
one of Kinetic's own options needs no row. llama_flags.translate() applies the table.
"""

from __future__ import annotations


def _flags(*spellings: str) -> list[str]:
    return [flag for text in spellings for flag in text.split()]


RENAMED = {
    "-sys": "--system", "--system-prompt": "--system", "--temperature": "--temp", "-dev": "--device",
    "-np": "--parallel", "-a": "--alias", "-rea": "--reasoning", "-ngl": "--gpu-layers",
    "--n-gpu-layers": "--gpu-layers", "-ctk": "--cache-type-k", "-ctv": "--cache-type-v",
    # beyond the table: llama.cpp's other spellings of Kinetic's options
    "-h": "--help", "--usage": "--help", "--predict": "--n-predict", "--typical-p": "--typical",
    "--top-n-sigma": "--top-nsigma", "-jf": "--json-schema-file", "--no-cache-prompt": "--no-prompt-cache",
}

_VALUE, _NO_VALUE = 1, 0
# Things Kinetic does by itself: dropped with their value, if they take one.
ACCEPTED = {
    **dict.fromkeys(_flags(  # the reference docs' table
        "-fa --flash-attn -b --batch-size -ub --ubatch-size -tb --threads-batch --cache-reuse --numa --prio --poll",
        "-to --timeout --threads-http"), _VALUE),
    **dict.fromkeys(_flags(
        "--jinja --mmap -cb --cont-batching -nocb --no-cont-batching --no-warmup --metrics --slots --no-webui",
        "--embedding --embeddings -no-cnv --no-conversation -st --single-turn --rerank --reranking"), _NO_VALUE),
    # threads, memory and cache placement: Kinetic chooses them for the device
    **dict.fromkeys(_flags(
        "--prio-batch --poll-batch -dt --defrag-thold -lzm --lazy-mode -fitt --fit-target -fitc --fit-ctx -fit --fit",
        "--kv-unified-per-slot -ctxcp --ctx-checkpoints --swa-checkpoints -cms --checkpoint-min-step -cram",
        "--cache-ram -sps --slot-prompt-similarity --sse-ping-interval --image-min-tokens --image-max-tokens",
        "--mtmd-batch-max-tokens --video-fps --video-timestamp-interval --video-ffmpeg-dir --tags --cors-methods",
        "--cors-headers -co --color --log-colors -lv --verbosity --log-verbosity"), _VALUE),
    **dict.fromkeys(_flags(
        "--swa-full -kvo --kv-offload --repack -nr --no-repack --no-host --op-offload --no-op-offload",
        "--check-tensors --perf --no-perf -bs --backend-sampling --no-escape --offline --cache-prompt -kvu",
        "--kv-unified -no-kvu --no-kv-unified --cache-idle-slots --no-cache-idle-slots --no-context-shift",
        "--warmup --spm-infill --mmproj-auto --no-mmproj --no-mmproj-auto --mmproj-offload --no-mmproj-offload",
        "--ui-mcp-proxy --webui-mcp-proxy --no-ui-mcp-proxy --no-webui-mcp-proxy --no-ui -no-ag --no-agent",
        "--reasoning-preserve --no-reasoning-preserve --no-skip-chat-parsing --prefill-assistant",
        "--no-prefill-assistant --models-autoload --no-models-autoload --log-disable --log-jsonl --no-log-jsonl",
        "-v --verbose --log-verbose --log-prefix --no-log-prefix --log-timestamps --no-log-timestamps",
        "--verbose-prompt --display-prompt --no-display-prompt --show-timings --no-show-timings -mli",
        "--multiline-input --simple-io"), _NO_VALUE),
}

# Accepted with these values only (they ask for what Kinetic does); other values are refused with the line.
ACCEPTED_IF = {
    **dict.fromkeys(["-lm", "--load-mode"], (("auto", "mmap"), "Kinetic memory-maps the model file (mmap)")),
    "--reasoning-format": (("auto", "deepseek"), "Kinetic returns the thinking in reasoning_content, the "
                                                 "deepseek format"),
    "--reasoning-effort": (("default",), "the effort is the chat template's default; send reasoning_effort "
                                         "in chat_template_kwargs with the request"),
    "--reasoning-budget": (("-1",), "Kinetic does not cut the thinking short; limit the whole answer with -n"),
    "--reasoning-budget-message": ((), "Kinetic does not cut the thinking short; limit the whole answer with -n"),
}

_ONE_DEVICE = "Kinetic runs the model wholly on one device; choose it with --device"
_NO_DRAFT = "speculative decoding is automatic and needs no draft model"
_CHAT = "use kinetic chat <model>"
_PULL = "download with kinetic pull <org>/<repo>[:<quant>], then run it by name"
_CONSTRAINED = "constrained output is in the server, through grammar and response_format"
_ROTARY = "Kinetic takes the rotary settings from the model file"
_VISION = "Kinetic runs text models; images, audio and video are not available yet"
_ONE_MODEL = "Kinetic serves one model per server; start one kinetic serve per model, each on its own --port"
_NO_TOOLS = "Kinetic runs no tools itself; the client sends its tools with each request"
_PROXY = "put a reverse proxy (nginx, Caddy) in front of kinetic serve for it"
_LORA = "LoRA adapters are not available yet; merge one into the model with llama.cpp's llama-export-lora"
REFUSED = {
    # the reference docs' table
    **dict.fromkeys(_flags("-sm --split-mode -ts --tensor-split -mg --main-gpu -ot --override-tensor"), _ONE_DEVICE),
    **dict.fromkeys(_flags("-cnv --conversation -i --interactive --interactive-first"), _CHAT),
    "--chat-template": "built-in template names are not supported; pass a Jinja file with --chat-template-file",
    **dict.fromkeys(_flags("-md --model-draft --draft --draft-max --draft-min -ngld"), _NO_DRAFT),
    **dict.fromkeys(_flags("-hf --hf-repo -mu --model-url"), _PULL),
    **dict.fromkeys(_flags("-f --file"), "pipe the prompt in: kinetic run <model> < prompt.txt"),
    "--image": _VISION,
    **dict.fromkeys(_flags("--control-vector --control-vector-scaled"),
                    "control vectors are not supported yet"),
    "--api-key-file": "pass the key itself with --api-key",
    **dict.fromkeys(_flags("--ssl-key-file --ssl-cert-file"), "the server speaks plain HTTP; put a TLS proxy in front"),
    # beyond the table
    **dict.fromkeys(_flags("-cl --cache-list"), "list the models on this computer with kinetic models"),
    "--completion-bash": "Kinetic writes no completion script; kinetic --help lists the commands",
    "--list-devices": "kinetic doctor lists the devices and whether each is usable",
    **dict.fromkeys(_flags("-C --cpu-mask -Cr --cpu-range --cpu-strict -Cb --cpu-mask-batch -Crb --cpu-range-batch",
                           "--cpu-strict-batch"),
                    "Kinetic places its threads itself; set their number with -t, or pin them with taskset"),
    "--keep": "Kinetic never drops prompt tokens to make room; give a larger -c",
    **dict.fromkeys(_flags("-e --escape"), "Kinetic takes the prompt as written; write real newlines "
                                           "(bash: $'line one\\nline two')"),
    **dict.fromkeys(_flags("--rope-scaling --rope-scale --rope-freq-base --rope-freq-scale --yarn-orig-ctx",
                           "--yarn-ext-factor --yarn-attn-factor --yarn-beta-slow --yarn-beta-fast"), _ROTARY),
    **dict.fromkeys(_flags("-nkvo --no-kv-offload"), "the cache stays on the model's device; run both on the "
                                                     "CPU with --device cpu"),
    "--rpc": "Kinetic runs on this computer's own devices; start kinetic serve on the other computer instead",
    **dict.fromkeys(_flags("-cmoe --cpu-moe -ncmoe --n-cpu-moe"), "Kinetic keeps the experts that do not fit the GPU "
                                                                "in system memory by itself (Flywheel); cap its GPU "
                                                                "memory with --gpu-memory"),
    **dict.fromkeys(_flags("-ncffn --n-cpu-ffn"), _ONE_DEVICE),
    "--override-kv": "Kinetic reads the metadata as the file has it; change the file with gguf-py's "
                     "gguf_set_metadata",
    **dict.fromkeys(_flags("--lora --lora-scaled --lora-init-without-apply"), _LORA),
    "--control-vector-layer-range": "control vectors are not supported yet",
    **dict.fromkeys(_flags("-dr --docker-repo -hfr -hff --hf-file"), _PULL),
    **dict.fromkeys(_flags("-hft --hf-token"), "kinetic pull reads the token from HF_TOKEN"),
    "--log-file": "Kinetic logs to stderr; redirect it: 2> kinetic.log",
    **dict.fromkeys(_flags(
        "--spec-draft-type-k -ctkd --cache-type-k-draft --spec-draft-type-v -ctvd --cache-type-v-draft",
        "--spec-draft-hf -hfd -hfrd --hf-repo-draft --spec-draft-threads -td --threads-draft",
        "--spec-draft-threads-batch -tbd --threads-batch-draft --spec-draft-cpu-mask -Cd --cpu-mask-draft",
        "--spec-draft-cpu-range -Crd --cpu-range-draft --spec-draft-cpu-strict --cpu-strict-draft",
        "--spec-draft-prio --prio-draft --spec-draft-poll --poll-draft --spec-draft-cpu-mask-batch -Cbd",
        "--cpu-mask-batch-draft --spec-draft-cpu-strict-batch --cpu-strict-batch-draft --spec-draft-prio-batch",
        "--prio-batch-draft --spec-draft-poll-batch --poll-batch-draft --spec-draft-override-tensor -otd",
        "--override-tensor-draft --spec-draft-cpu-moe -cmoed --cpu-moe-draft --spec-draft-n-cpu-moe",
        "--spec-draft-ncmoe -ncmoed --n-cpu-moe-draft --spec-draft-n-max --spec-draft-n-min --spec-synth-len",
        "--spec-synth-rates --spec-draft-p-split --draft-p-split --spec-draft-p-min --draft-p-min",
        "--spec-draft-backend-sampling --no-spec-draft-backend-sampling --spec-draft-sampling",
        "--spec-draft-device -devd --device-draft --spec-draft-ngl --gpu-layers-draft --n-gpu-layers-draft",
        "--spec-draft-model --spec-type --spec-ngram-mod-n-min --spec-ngram-mod-n-max --spec-ngram-mod-n-match",
        "--spec-ngram-simple-size-n --spec-ngram-simple-size-m --spec-ngram-simple-min-hits",
        "--spec-ngram-map-k-size-n --spec-ngram-map-k-size-m --spec-ngram-map-k-min-hits",
        "--spec-ngram-map-k4v-size-n --spec-ngram-map-k4v-size-m --spec-ngram-map-k4v-min-hits --draft-n",
        "--draft-n-min --spec-ngram-size-n --spec-ngram-size-m --spec-ngram-min-hits --spec-default",
        "-lcs --lookup-cache-static -lcd --lookup-cache-dynamic"), _NO_DRAFT),
    **dict.fromkeys(_flags("--samplers --sampler-seq --sampling-seq"),
                    "Kinetic runs the samplers in llama.cpp's default order; turn one off with its own flag"),
    "--ignore-eos": "the answer ends at the model's end token; cap its length with -n",
    **dict.fromkeys(_flags("--adaptive-target --adaptive-decay --dynatemp-range --dynatemp-exp"),
                    "this sampler is not available; kinetic run --help lists the samplers Kinetic has"),
    **dict.fromkeys(_flags("-l --logit-bias"), "send logit_bias with the request to kinetic serve"),
    "--context-shift": "Kinetic never drops context to make room; give a larger -c",
    **dict.fromkeys(_flags("-r --reverse-prompt"), "send stop strings with the request to kinetic serve"),
    **dict.fromkeys(_flags("-sp --special"), "Kinetic prints the answer's text; /tokenize on kinetic serve "
                                             "shows its tokens"),
    "--pooling": "Kinetic pools as the model file says (<arch>.pooling_type)",
    "--embd-normalize": "send embd_normalize with each /embedding request",
    **dict.fromkeys(_flags("-mm --mmproj -mmu --mmproj-url -mmdev --mmproj-device --media-path --audio --video"),
                    _VISION),
    "--reuse-port": "Kinetic binds its port alone; give each server its own --port",
    "--path": "Kinetic serves no static files; " + _PROXY,
    "--api-prefix": "Kinetic serves at the root; " + _PROXY,
    **dict.fromkeys(_flags("--ui --webui --ui-config --webui-config --ui-config-file --webui-config-file"),
                    "Kinetic has no web UI; point a chat UI such as Open WebUI at it"),
    **dict.fromkeys(_flags("--tools --tools-runtime --mcp-servers-config --mcp-servers-json -ag --agent"), _NO_TOOLS),
    "--props": "Kinetic's /props is read-only; restart kinetic serve with the new flags",
    "--slot-save-path": "Warm Start keeps prompt states on disk by itself; choose the folder with --cache-dir",
    **dict.fromkeys(_flags("--models-dir --models-preset --models-max"), _ONE_MODEL),
    "--no-jinja": "Kinetic always renders the model's Jinja template; give another with --chat-template-file",
    "--skip-chat-parsing": "Kinetic always reads thinking and tool calls out of the answer",
    "--sleep-idle-seconds": "Kinetic keeps the model loaded while it serves; stop the server to free the memory",
    "--log-prompts-dir": "Kinetic does not write prompts to disk",
    **dict.fromkeys(_flags("--embd-gemma-default --fim-qwen-1.5b-default --fim-qwen-3b-default",
                           "--fim-qwen-7b-default --fim-qwen-7b-spec --fim-qwen-14b-spec --fim-qwen-30b-default",
                           "--gpt-oss-20b-default --gpt-oss-120b-default --vision-gemma-4b-default",
                           "--vision-gemma-12b-default"), _PULL),
    **dict.fromkeys(_flags("-bf --binary-file"), "pipe the prompt in: kinetic run <model> < prompt.txt"),
    **dict.fromkeys(_flags("-sysf --system-prompt-file"), 'pass the file\'s text: --system "$(cat FILE)"'),
    **dict.fromkeys(_flags("-o --output --output-file"), "redirect the answer: kinetic run <model> ... > FILE"),
    "--chat-template-kwargs": "turn the thinking on or off with --reasoning; kinetic serve takes "
                              "chat_template_kwargs with each request",
    "--server-base": "kinetic chat runs the model itself; to use a server, point an OpenAI client at kinetic serve",
}

# Accepted by one command only, which does by itself what the flag asks for (REFUSED has the others' line).
ACCEPTED_IN = {"chat": _flags("-cnv --conversation -i --interactive --interactive-first")}

# Refused by one command only, where the flag means something that command does per request.
REFUSED_IN = {
    "serve": {
        **dict.fromkeys(_flags("--grammar --grammar-file -j --json-schema -jf --json-schema-file"), _CONSTRAINED),
        **dict.fromkeys(_flags("--reasoning -rea"), "send chat_template_kwargs {\"enable_thinking\": false} with "
                                                    "a request to turn the thinking off"),
        "--chat-template-kwargs": "send chat_template_kwargs with each request",
        "--system": "send the system message with each request",
    },
    "bench": {**dict.fromkeys(_flags("--grammar --grammar-file -j --json-schema -jf"), _CONSTRAINED),
              **dict.fromkeys(_flags("-o --output"), "it prints a table, or JSON with --json")},
}
