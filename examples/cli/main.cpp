// lmrt: run, inspect and tokenize GGUF models from the command line.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli_common.h"

namespace {

constexpr const char* kUsage =
    "usage: lmrt COMMAND [options]\n"
    "  run       -m MODEL -p PROMPT [-n N] [-t THREADS] [-c CTX] [--json]   stream a completion\n"
    "            sampling: --temp T --top-k K --top-p P --min-p P --typical P --repeat-penalty R\n"
    "              --repeat-last-n N --presence-penalty X --frequency-penalty X --logit-bias ID=BIAS\n"
    "              --seed S --samplers SPEC (e.g. \"top_k(40) top_p(0.9) temperature(0.7) dist\")\n"
    "            --stop STR (repeatable) --logprobs N --beams K [--length-penalty L]\n"
    "            --context-shift [--keep N] --no-bos --special --kv-f32 --cache FILE\n"
    "            --prefix-cache N (with --cache: store prompt states of N+ tokens, load them later)\n"
    "            --plugin FILE (repeatable) --stop-plugin SPEC (e.g. 'regex(pattern=\"[.!?]\")')\n"
    "            constrained: --grammar FILE.gbnf | --json-schema FILE.json | --json-object (any JSON\n"
    "              object; --json is the run's JSON output) ('grammar' in --samplers places it)\n"
    "  chat      -m MODEL [--system TEXT] [-n N] [-t THREADS] [-c CTX] [sampling as in run] [--verbose]\n"
    "            [--template FILE | --chatml]   talk with the model, its chat template laying out the turns\n"
    "            (earlier turns' KV reused); a line is a message, \"\"\" opens and closes one of several\n"
    "            lines; /system /reset /save FILE /save! FILE /load FILE /stats /help /quit; Ctrl-C stops a\n"
    "            reply, Ctrl-D quits\n"
    "  info      -m MODEL [--json]                                          model summary\n"
    "  tokenize  -m MODEL (-p TEXT | -f FILE) [--no-bos] [--special]       print token ids\n"
    "  template  -m MODEL --messages FILE.json [--tools FILE.json] [--no-generation-prompt]\n"
    "            [--template FILE] [--template-name NAME] [--vars FILE.json] [--bos TEXT] [--eos TEXT]\n"
    "            print the chat as the model's chat template lays it out (exactly, no newline added)\n"
    "  cache     stats|clear|vacuum FILE [--json]                          look after a response cache\n"
    "  plugins   [--plugin FILE]... [--json]                                samplers, stop criteria, versions\n"
    "  bench     -m MODEL [-t T] [-p P] [-n G] [--reps R] [--sequences 1,2,4,8,16] [--json] | --synthetic NAME -o "
    "FILE\n"
    "  bench     -m MODEL --chat-turns N | --shared-prefix S [--sequences N] [-p P] [-n G] [--chunk C] [--json]\n"
    "            prefix reuse in the engine, on against off: time to first token per chat turn (a P-token\n"
    "            message, a G-token reply each), or N requests sharing an S-token system prompt\n"
    "  quantize  -m MODEL -o FILE TYPE [-t THREADS]                         quantize an F32/F16/BF16/Q8_0\n"
    "            model as llama-quantize does: TYPE Q4_K_M Q4_K_S Q5_K_M Q5_K_S Q6_K Q3_K_M Q3_K_L Q3_K_S Q2_K\n"
    "            Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL IQ4_XS\n"
    "  quantize  --interleave -m MODEL -o FILE                              rewrite Q4_0 matrices as\n"
    "            lmrt's interleaved Q4_0x16 (faster AVX-512/AVX2 decode; llama.cpp cannot read the result)\n"
    "  logits    -m MODEL --ids \"1 2 3\" -o OUT.f32 [--all] [-t N]         the ids as one batch: float32\n"
    "            logits, n_vocab per row, of the last position (every position with --all)\n"
    "  kld       BASE.f32 OTHER.f32 [--vocab N | -m MODEL] [--json]        mean KL divergence, top-1\n"
    "            agreement and relative RMS error of OTHER's logits against BASE's\n"
    "  serve     -m MODEL [--port 8080] [--parallel N] ...                 OpenAI-compatible HTTP server\n"
    "MODEL may also come from $LMRT_MODEL. lmrt %s (ABI %u)\n";

void usage(FILE* out) { std::fprintf(out, kUsage, lmrt_version_string(), lmrt_abi_version()); }

// `lmrt COMMAND --help`: the usage lines of that command (each entry starts "  COMMAND " and runs until
// the next entry); false for a command the usage does not list.
bool command_usage(const std::string& cmd) {
  const std::string text = kUsage, head = "  " + cmd + " ";
  std::string lines;
  bool in = false;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at + 1);
    at = end + 1;
    if (line.starts_with("  ") && line[2] != ' ')
      in = line.starts_with(head);
    else if (!line.starts_with("   "))
      in = false;
    if (in) lines += line;
  }
  if (lines.empty()) return false;
  std::printf("usage: lmrt COMMAND [options]\n%sMODEL may also come from $LMRT_MODEL.\n", lines.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  // serve prints its own, longer help.
  if (argc == 3 && cmd != "serve" && (std::strcmp(argv[2], "-h") == 0 || std::strcmp(argv[2], "--help") == 0) &&
      command_usage(cmd))
    return 0;
  if (cmd == "run") return cmd_run(argc, argv);
  if (cmd == "chat") return cmd_chat(argc, argv);
  if (cmd == "info") return cmd_info(argc, argv);
  if (cmd == "tokenize") return cmd_tokenize(argc, argv);
  if (cmd == "template") return cmd_template(argc, argv);
  if (cmd == "cache") return cmd_cache(argc, argv);
  if (cmd == "plugins") return cmd_plugins(argc, argv);
  if (cmd == "bench") return cmd_bench(argc, argv);
  if (cmd == "quantize") return cmd_quantize(argc, argv);
  if (cmd == "logits") return cmd_logits(argc, argv);
  if (cmd == "kld") return cmd_kld(argc, argv);
  if (cmd == "serve") return cmd_serve(argc, argv);
  if (cmd == "version" || cmd == "--version") {
    std::printf("lmrt %s (ABI %u), %s kernels\n", lmrt_version_string(), lmrt_abi_version(), lmrt_isa());
    return 0;
  }
  cli::print_error("unknown command '" + cmd + "'", "see 'lmrt --help'");
  return 2;
}
