#include "config.h"

/* ryzen-generate: text from a checkpoint and its tokenizer, and a text's perplexity.  A thin
 * main: it reads its environment once (RYZEN_ISA, TMPDIR) and hands over to gen_main
 * (src/gen/gen_cli.c), which owns the options, the output and the exit codes. */

#include <stdlib.h>

#include "gen/gen.h"

int main(int argc, char **argv)
{
    const char *isa = getenv("RYZEN_ISA"), *tmpdir = getenv("TMPDIR");
    struct gen_env env = {.isa = isa != NULL ? isa : "", .tmpdir = tmpdir != NULL ? tmpdir : ""};
    return gen_main(argc, argv, &env);
}
