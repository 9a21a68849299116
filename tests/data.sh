#!/bin/sh
# data.sh: ryzen-data as a user runs it: train a small tokenizer on a generated corpus, encode it
# (the same file on 1 and 2 threads, a valid .sha256 sidecar), info, decode back to the input's
# bytes, a manifest over 3 shards that verifies (also after the directory moves) and names the
# shard changed after it; the errors: too small a vocabulary, a missing input or output
# directory, another tokenizer (64), a full disk (74) and a crash before the rename, neither of
# which leaves a partial file.  Nothing here depends on speed: a few seconds on 2 slow cores.
set -u
src=${top_srcdir:-.}
bin=${top_builddir:-.}/ryzen-data
tmp=$(mktemp -d /tmp/rz-data-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"

# A corpus of about 100 kB: lines of words from a fixed list (the same on every run), empty
# lines, UTF-8, and one line of bytes that are not UTF-8.
awk 'BEGIN {
  n = split("the of and to in is that it was for on are with they be at one have this from " \
            "by hot word but what some we can out other were all there when up use your how " \
            "said an each she which do their time if will way about many then them write " \
            "café naïve λόγος 日本 (1984) --", w, " ")
  s = 39
  for (line = 0; line < 9000; line++) {
    s = (s * 1103515245 + 12345) % 2147483648; k = int(s / 65536) % 14
    out = ""
    for (i = 0; i < k; i++) {
      s = (s * 1103515245 + 12345) % 2147483648
      out = out (i ? " " : "") w[1 + int(s / 65536) % n]
    }
    print out
  }
}' >"$tmp/corpus.txt"
printf 'bad bytes: \377\376 \303 end\n' >>"$tmp/corpus.txt"
mkdir "$tmp/data" "$tmp/data/shards"

# has PATTERN...: every one in the last command's output
has() {
  for p in "$@"; do grep -Eq -- "$p" "$tmp/out" || return 1; done
}

expect "help" 0 "usage: ryzen-data tokenizer train" -- "$bin" --help
expect "help of a subcommand" 0 "ryzen-data encode --tokenizer MODEL" -- "$bin" encode --help
expect "version" 0 "ryzen-data \(ryzen-llm\)" -- "$bin" --version
expect "no subcommand: usage error" 64 "a subcommand is required" -- "$bin"
expect "unknown option" 64 "unknown option '--bogus'" -- "$bin" encode --bogus
expect "vocabulary too small: exit 64 naming the limit" 64 "vocabulary size 100 .*at least" \
  -- "$bin" tokenizer train --vocab-size 100 --out "$tmp/small" "$tmp/corpus.txt"
expect "tokenizer train of a missing file: exit 64 naming it" 64 "$tmp/none.txt" \
  -- "$bin" tokenizer train --vocab-size 300 --out "$tmp/none" "$tmp/none.txt"

expect "tokenizer train" 0 "tok.model \(bpe\): vocabulary 320, sha256 [0-9a-f]{64}" \
  -- "$bin" tokenizer train --vocab-size 320 --threads 2 --out "$tmp/tok" "$tmp/corpus.txt"
check "... wrote tok.model and tok.vocab" test -s "$tmp/tok.model" -a -s "$tmp/tok.vocab"
expect "a second tokenizer" 0 "vocabulary 300" \
  -- "$bin" tokenizer train --vocab-size 300 --threads 2 --out "$tmp/other" "$tmp/corpus.txt"

bytes=$(wc -c <"$tmp/corpus.txt")
expect "encode on 2 threads" 0 "tokens from $bytes bytes of 1 file\(s\) .* on 2 thread\(s\)" \
  -- "$bin" encode --tokenizer "$tmp/tok.model" --threads 2 --out "$tmp/data/all.tok" "$tmp/corpus.txt"
tokens=$(sed -n 's/.*encode: \([0-9]*\) tokens from.*/\1/p' "$tmp/out")
check "... no progress lines when stderr is not a terminal" lacks "$tmp/out" "ETA"
check "... its .sha256 sidecar checks with sha256sum" \
  sh -c "cd '$tmp/data' && sha256sum -c --status all.tok.sha256"
SLURM_CPUS_PER_TASK=1 expect "encode on SLURM_CPUS_PER_TASK=1 thread" 0 "on 1 thread\(s\)" \
  -- "$bin" encode --tokenizer "$tmp/tok.model" --out "$tmp/one.tok" "$tmp/corpus.txt"
check "... the same bytes as on 2 threads" cmp -s "$tmp/data/all.tok" "$tmp/one.tok"

expect "info" 0 "tokens +$tokens$" -- "$bin" info "$tmp/data/all.tok"
check "... magic, vocabulary, width and entropy" has "RZTOKENS, version 1" "vocabulary +320" \
  "id width +2 bytes" "unigram entropy +[1-5]\.[0-9]+ nats/token"
sha=$(sed -n 's/^tokenizer sha256 *//p' "$tmp/out")
expect "info --json" 0 "" -- "$bin" info --json "$tmp/data/all.tok"
check "... its token count and tokenizer hash" jsonl_ok "$tmp/out" \
  'any(.[]; .tokens == ($t | tonumber) and .tokenizer_sha256 == $s)' --arg t "$tokens" --arg s "$sha"

"$bin" decode --tokenizer "$tmp/tok.model" "$tmp/data/all.tok" >"$tmp/decoded.txt" 2>"$tmp/out"
check "decode: the input's bytes, invalid UTF-8 too" cmp -s "$tmp/decoded.txt" "$tmp/corpus.txt"
"$bin" decode --tokenizer "$tmp/tok.model" --count 40 "$tmp/data/all.tok" >"$tmp/head.txt"
check "decode --count 40: a prefix of the input" sh -c \
  "test -s '$tmp/head.txt' && head -c \$(wc -c <'$tmp/head.txt') '$tmp/corpus.txt' | cmp -s - '$tmp/head.txt'"
expect "decode with another tokenizer: exit 64 naming both" 64 \
  "encoded with tokenizer $sha, but '$tmp/other.model' is [0-9a-f]{64}" \
  -- "$bin" decode --tokenizer "$tmp/other.model" "$tmp/data/all.tok"

expect "encode a missing input: exit 64 naming it" 64 "input '$tmp/none.txt': No such file" \
  -- "$bin" encode --tokenizer "$tmp/tok.model" --out "$tmp/x.tok" "$tmp/corpus.txt" "$tmp/none.txt"
expect "encode into a missing directory: exit 64 naming it" 64 "directory '$tmp/nodir' does not exist" \
  -- "$bin" encode --tokenizer "$tmp/tok.model" --out "$tmp/nodir/x.tok" "$tmp/corpus.txt"
expect "decode a missing token file: exit 64 naming it" 64 "'$tmp/none.tok': No such file" \
  -- "$bin" decode --tokenizer "$tmp/tok.model" "$tmp/none.tok"
expect "verify a missing manifest: exit 64 naming it" 64 "'$tmp/none.json': No such file" \
  -- "$bin" verify "$tmp/none.json"
mkdir "$tmp/full"
expect "a full disk (file size limit): exit 74 naming the file" 74 "full.tok.*(File too large|disk full)" -- sh -c \
  "ulimit -f 16; trap '' XFSZ; exec '$bin' encode --tokenizer '$tmp/tok.model' --out '$tmp/full/full.tok' '$tmp/corpus.txt'"
check "... and nothing partial left" test -z "$(ls -A "$tmp/full")"
if "$bin" --version | grep -q "test hooks: compiled in"; then
  RYZEN_TEST_CRASH_AT=tokfile:before_rename "$bin" encode --tokenizer "$tmp/tok.model" \
    --out "$tmp/full/crash.tok" "$tmp/corpus.txt" >"$tmp/out" 2>&1
  check "a crash before the rename: no token file, no sidecar" \
    test ! -e "$tmp/full/crash.tok" -a ! -e "$tmp/full/crash.tok.sha256"
fi

# three shards, as sbatch/prepare_data.sh's array tasks write them
split -n l/3 -d -a 1 "$tmp/corpus.txt" "$tmp/part-"
for i in 0 1 2; do
  "$bin" encode --tokenizer "$tmp/tok.model" --out "$tmp/data/shards/shard-0000$i.tok" \
    "$tmp/part-$i" 2>>"$tmp/shards.log" || bad "encode shard $i"
done
expect "manifest over 3 shards" 0 "manifest .*manifest.json: 3 shard\(s\), [0-9]+ tokens" \
  -- "$bin" manifest --out "$tmp/data/manifest.json" "$tmp"/data/shards/shard-*.tok
check "... shard paths relative to the manifest" \
  json_ok "$tmp/data/manifest.json" '.shards[0].path == "shards/shard-00000.tok"'
expect "verify" 0 "manifest.json: ok \(3 shard\(s\)" -- "$bin" verify "$tmp/data/manifest.json"
expect "info of the manifest" 0 "shards +3" -- "$bin" info "$tmp/data/manifest.json"
mv "$tmp/data" "$tmp/moved"
cp -r "$tmp/moved" "$tmp/moved2"
expect "verify after the directory moved" 0 ": ok" -- "$bin" verify "$tmp/moved/manifest.json"
printf 'X' | dd of="$tmp/moved/shards/shard-00001.tok" bs=1 seek=200 conv=notrunc 2>/dev/null
expect "verify after one shard byte changed: exit 64 naming the shard" 64 "shard-00001.tok" \
  -- "$bin" verify "$tmp/moved/manifest.json"
expect "manifest over the changed shard: exit 64 naming it" 64 "shard-00001.tok' changed" \
  -- "$bin" manifest --out "$tmp/moved/manifest.json" "$tmp"/moved/shards/shard-*.tok
rm "$tmp/moved2/shards/shard-00002.tok"
expect "verify with a shard missing: exit 64 naming it" 64 "shard-00002.tok" \
  -- "$bin" verify "$tmp/moved2/manifest.json"

finish
