/* check_record_tok.c: the token file (record/tokfile.c) and the data manifest
 * (record/manifest.c), two test cases of check_record (check_record.c builds the suite):
 * round trips of both widths and of a manifest of three shards, and every error path: a
 * truncated header, a wrong version, width or header size, a count that disagrees with the file
 * size, an id outside the vocabulary, a full disk (RLIMIT_FSIZE in Check's forked child), a
 * manifest with a key missing, and a shard changed, missing, resized or of another tokenizer. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sha256.h"
#include "core/util.h"
#include "record/manifest.h"
#include "record/tokfile.h"
#include "record_tok.h"
#include "testutil.h"

static char tdir[64];

static void tok_setup(void) { rz_test_tmpdir(tdir, sizeof tdir, "record-tok"); }
static void tok_teardown(void) { rz_test_rmtree(tdir); }

static const char *tpath(const char *name)
{
    static char buf[4][256];
    static unsigned k;
    char *p = buf[k++ % 4];
    rz_fmt(p, 256, "%s/%s", tdir, name);
    return p;
}

static const uint8_t tok_sha[32] = {0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
                                    0xcd};

/* Write ids[0..n) to path as a token file, in two appends; the file's SHA-256 into hex. */
static void write_tok(const char *path, unsigned width, uint64_t vocab, const int32_t *ids,
                      size_t n, char hex[65])
{
    struct tokfile_writer w;
    struct rz_err e = {0};
    ck_assert_msg(tokfile_writer_open(&w, path, width, vocab, tok_sha, &e) == RZ_OK, "%s", e.msg);
    ck_assert_msg(tokfile_writer_append(&w, ids, n / 2, &e) == RZ_OK, "%s", e.msg);
    ck_assert_msg(tokfile_writer_append(&w, ids + n / 2, n - n / 2, &e) == RZ_OK, "%s", e.msg);
    ck_assert_msg(tokfile_writer_commit(&w, hex, &e) == RZ_OK, "%s", e.msg);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    char *buf;
    struct rz_err e = {0};
    ck_assert_msg(rz_read_file(path, &buf, len, &e) == RZ_OK, "%s", e.msg);
    return (unsigned char *)buf;
}

static void put_bytes(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* Nothing but `keep` (may be NULL) in tdir: no temporary file left behind. */
static void only_file(const char *keep)
{
    char cmd[512];
    rz_fmt(cmd, sizeof cmd, "test \"$(ls -A '%s')\" = '%s'", tdir, keep != NULL ? keep : "");
    ck_assert_msg(system(cmd) == 0, "%s holds more than '%s'", tdir, keep ? keep : "");
}

/* Both widths: the header reads back, the ids sit little-endian at offset 128, and the SHA-256
 * the writer returns is that of the committed file. */
START_TEST(tokfile_round_trip)
{
    static const int32_t ids[] = {0, 1, 255, 256, 4095, 65535, 7, 3};
    const size_t n = RZ_ARRAY_LEN(ids);
    for (int k = 0; k < 2; k++) {
        unsigned width = k == 0 ? 2 : 4;
        uint64_t vocab = k == 0 ? 65536 : 70000;
        const char *path = tpath("a.tok");
        char hex[65], want[65], tokhex[65];
        write_tok(path, k == 0 ? 0 : 4, vocab, ids, n, hex);
        only_file("a.tok");
        size_t len;
        unsigned char *buf = slurp(path, &len);
        ck_assert_uint_eq(len, 128 + n * width);
        ck_assert_mem_eq(buf, "RZTOKENS", 8);
        rz_sha256_hex(buf, len, want);
        ck_assert_str_eq(hex, want);
        for (size_t i = 0; i < n; i++) {
            uint32_t v = 0;
            for (unsigned b = 0; b < width; b++)
                v |= (uint32_t)buf[128 + i * width + b] << (8 * b);
            ck_assert_uint_eq(v, (uint32_t)ids[i]);
        }
        free(buf);
        struct tokfile_header h;
        bool has;
        struct rz_err e = {0};
        ck_assert_msg(tokfile_read_header(path, &h, &has, &e) == RZ_OK, "%s", e.msg);
        ck_assert(has);
        ck_assert_uint_eq(h.version, 1);
        ck_assert_uint_eq(h.width, width);
        ck_assert_uint_eq(h.vocab_size, vocab);
        ck_assert_uint_eq(h.n_tokens, n);
        tokfile_sha_hex(&h, tokhex);
        rz_sha256_to_hex(tok_sha, want);
        ck_assert_str_eq(tokhex, want);
        unlink(path);
    }
}
END_TEST

/* An empty token file is a header alone; no tokenizer hash reads back as "". */
START_TEST(tokfile_empty_and_no_tokenizer)
{
    struct tokfile_writer w;
    struct tokfile_header h;
    struct rz_err e = {0};
    bool has;
    char hex[65];
    const char *path = tpath("e.tok");
    ck_assert_int_eq(tokfile_writer_open(&w, path, 0, 300, NULL, &e), RZ_OK);
    ck_assert_int_eq(tokfile_writer_commit(&w, NULL, &e), RZ_OK);
    tokfile_writer_abort(&w); /* after a commit: nothing */
    ck_assert_int_eq(tokfile_read_header(path, &h, &has, &e), RZ_OK);
    ck_assert(has);
    ck_assert_uint_eq(h.n_tokens, 0);
    ck_assert_uint_eq(h.width, 2);
    tokfile_sha_hex(&h, hex);
    ck_assert_str_eq(hex, "");
    /* A file without the magic is headerless, not an error. */
    put_bytes(tpath("raw.tok"), "\x01\x00\x02\x00", 4);
    ck_assert_int_eq(tokfile_read_header(tpath("raw.tok"), &h, &has, &e), RZ_OK);
    ck_assert(!has);
    ck_assert(!tokfile_has_magic("RZTOKEN", 7));
    ck_assert(tokfile_has_magic("RZTOKENSxyz", 11));
}
END_TEST

/* The header as tokfile.h lays it out, byte by byte. */
START_TEST(tokfile_header_layout)
{
    struct tokfile_header h = {.version = 1, .width = 4, .vocab_size = 0x01020304ull,
                               .n_tokens = 0x0a0b0c0dull};
    memcpy(h.tokenizer_sha256, tok_sha, 32);
    uint8_t b[TOKFILE_HEADER_BYTES];
    tokfile_header_encode(&h, b);
    ck_assert_mem_eq(b, "RZTOKENS\x01\0\0\0\x80\0\0\0\x04\0\0\0\0\0\0\0", 24);
    ck_assert_mem_eq(b + 24, "\x04\x03\x02\x01\0\0\0\0\x0d\x0c\x0b\x0a\0\0\0\0", 16);
    ck_assert_mem_eq(b + 40, tok_sha, 32);
    for (int i = 72; i < 128; i++)
        ck_assert_uint_eq(b[i], 0);
    struct tokfile_header back;
    struct rz_err e = {0};
    ck_assert_int_eq(tokfile_header_decode(b, sizeof b, 128 + 4 * 0x0a0b0c0dull, "x", &back, &e),
                     RZ_OK);
    ck_assert_uint_eq(back.vocab_size, h.vocab_size);
    ck_assert_uint_eq(back.n_tokens, h.n_tokens);
}
END_TEST

/* Three shards of 5, 7 and 4 tokens: manifest_write, manifest_read, full paths against the
 * manifest's directory, manifest_verify and the cheap check both pass. */
static struct manifest *three_shards(const char *manifest_path)
{
    static struct manifest_shard sh[3];
    static char names[3][32];
    static struct manifest m;
    static const size_t counts[3] = {5, 7, 4};
    int32_t ids[8];
    memset(&m, 0, sizeof m);
    rz_sha256_to_hex(tok_sha, m.tokenizer_sha256);
    m.vocab_size = 512;
    m.id_width = 2;
    for (int s = 0; s < 3; s++) {
        for (size_t i = 0; i < counts[s]; i++)
            ids[i] = (int32_t)(100 * s + (int)i);
        rz_fmt(names[s], sizeof names[s], "shard-%05d.tok", s);
        write_tok(tpath(names[s]), 2, 512, ids, counts[s], sh[s].sha256);
        sh[s].path = names[s];
        sh[s].tokens = counts[s];
        sh[s].bytes = 128 + 2 * counts[s];
        m.tokens += counts[s];
    }
    m.n_shards = 3;
    m.shards = sh;
    struct rz_err e = {0};
    ck_assert_msg(manifest_write(manifest_path, &m, &e) == RZ_OK, "%s", e.msg);
    struct manifest *got = NULL;
    ck_assert_msg(manifest_read(manifest_path, &got, &e) == RZ_OK, "%s", e.msg);
    return got;
}

START_TEST(manifest_round_trip)
{
    char mp[256];
    rz_fmt(mp, sizeof mp, "%s", tpath("manifest.json"));
    struct manifest *m = three_shards(mp);
    struct rz_err e = {0};
    char want[65];
    rz_sha256_to_hex(tok_sha, want);
    ck_assert_str_eq(m->tokenizer_sha256, want);
    ck_assert_uint_eq(m->vocab_size, 512);
    ck_assert_uint_eq(m->id_width, 2);
    ck_assert_uint_eq(m->tokens, 16);
    ck_assert_uint_eq(m->n_shards, 3);
    ck_assert_str_eq(m->shards[1].path, "shard-00001.tok");
    ck_assert_str_eq(m->shards[1].full_path, tpath("shard-00001.tok"));
    ck_assert_uint_eq(m->shards[2].tokens, 4);
    ck_assert_uint_eq(m->shards[2].bytes, 136);
    size_t len;
    unsigned char *buf = slurp(m->shards[0].full_path, &len);
    rz_sha256_hex(buf, len, want);
    free(buf);
    ck_assert_str_eq(m->shards[0].sha256, want);
    ck_assert_msg(manifest_verify(m, &e) == RZ_OK, "%s", e.msg);
    struct tokfile_header h;
    ck_assert_int_eq(manifest_check_shard(m, 2, &h, &e), RZ_OK);
    ck_assert_uint_eq(h.n_tokens, 4);
    ck_assert(manifest_sniff(mp));
    ck_assert(!manifest_sniff(m->shards[0].full_path));
    ck_assert(!manifest_sniff(tpath("no-such-file")));
    /* A headerless file whose first id is '{' (123) and the next '"' (34) is not a manifest. */
    put_bytes(tpath("raw.tok"), "{\0\"\0\x05\0", 6);
    ck_assert(!manifest_sniff(tpath("raw.tok")));
    put_bytes(tpath("ws.json"), "\n  {\n \"a\": 1}", 13);
    ck_assert(manifest_sniff(tpath("ws.json")));
    manifest_free(m);
    manifest_free(NULL);
}
END_TEST

/* ---- errors ---- */

static void expect_err(enum rz_status got, const struct rz_err *e, enum rz_status want,
                       const char *a, const char *b)
{
    ck_assert_msg(got == want, "status %d, wanted %d: %s", got, want, e->msg);
    ck_assert_msg(strstr(e->msg, a) != NULL, "message '%s' lacks '%s'", e->msg, a);
    ck_assert_msg(b == NULL || strstr(e->msg, b) != NULL, "message '%s' lacks '%s'", e->msg, b);
}

/* A good file of 4 uint16 ids, then damaged in place by `patch` at `off` (len bytes). */
static const char *damaged(const char *name, size_t off, const void *patch, size_t len)
{
    static const int32_t ids[] = {1, 2, 3, 4};
    char hex[65];
    const char *path = tpath(name);
    write_tok(path, 2, 100, ids, 4, hex);
    size_t n;
    unsigned char *buf = slurp(path, &n);
    ck_assert_uint_le(off + len, n);
    memcpy(buf + off, patch, len);
    put_bytes(path, buf, n);
    free(buf);
    return path;
}

static enum rz_status read_hdr(const char *path, struct rz_err *e)
{
    struct tokfile_header h;
    bool has;
    return tokfile_read_header(path, &h, &has, e);
}

START_TEST(tokfile_bad_headers)
{
    struct rz_err e = {0};
    const char *p;
    /* Truncated: the magic and 42 more bytes. */
    unsigned char shortbuf[50] = {0};
    memcpy(shortbuf, "RZTOKENS\x01\0\0\0\x80\0\0\0\x02", 17);
    put_bytes(tpath("short.tok"), shortbuf, sizeof shortbuf);
    expect_err(read_hdr(tpath("short.tok"), &e), &e, RZ_EDATA, "short.tok", "truncated header");
    p = damaged("ver.tok", 8, "\x02", 1);
    expect_err(read_hdr(p, &e), &e, RZ_EDATA, "ver.tok", "version 2");
    p = damaged("hb.tok", 12, "\x40", 1);
    expect_err(read_hdr(p, &e), &e, RZ_EDATA, "hb.tok", "header size 64");
    p = damaged("w3.tok", 16, "\x03", 1);
    expect_err(read_hdr(p, &e), &e, RZ_EDATA, "w3.tok", "width 3 bytes");
    /* Width 2 cannot hold a vocabulary of 70000 (0x011170). */
    p = damaged("w2.tok", 24, "\x70\x11\x01", 3);
    expect_err(read_hdr(p, &e), &e, RZ_EDATA, "w2.tok", "vocabulary of 70000");
    p = damaged("v0.tok", 24, "\0", 1);
    expect_err(read_hdr(p, &e), &e, RZ_EDATA, "v0.tok", "vocabulary of 0");
    /* The count says 5, the file holds 4 ids: both numbers named. */
    p = damaged("n5.tok", 32, "\x05", 1);
    expect_err(read_hdr(p, &e), &e, RZ_EDATA, "n5.tok", "says 5 tokens");
    ck_assert_msg(strstr(e.msg, "has 136 bytes") && strstr(e.msg, "138 bytes"), "%s", e.msg);
    /* An odd byte appended. */
    FILE *f = fopen(tpath("n5.tok"), "ab");
    ck_assert_ptr_nonnull(f);
    fputc(0, f);
    fclose(f);
    expect_err(read_hdr(p, &e), &e, RZ_EDATA, "n5.tok", "has 137 bytes");
    /* decode of a buffer without the magic names it headerless. */
    struct tokfile_header h;
    expect_err(tokfile_header_decode("XXXXXXXX", 8, 8, "raw.tok", &h, &e), &e, RZ_EDATA,
               "raw.tok", "headerless");
    expect_err(read_hdr(tpath("absent.tok"), &e), &e, RZ_EIO, "absent.tok", NULL);
    char hex[65];
    /* a missing file is missing data (RZ_EDATA), as a missing shard is to the manifest */
    expect_err(tokfile_sha256_file(tpath("absent.tok"), hex, NULL, &e), &e, RZ_EDATA,
               "absent.tok", "No such file");
    /* one that opens but cannot be read (a directory) is an I/O error */
    ck_assert_int_eq(mkdir(tpath("adir.tok"), 0755), 0);
    expect_err(tokfile_sha256_file(tpath("adir.tok"), hex, NULL, &e), &e, RZ_EIO, "adir.tok",
               "read");
}
END_TEST

START_TEST(tokfile_writer_refuses_bad_ids)
{
    struct tokfile_writer w;
    struct rz_err e = {0};
    const char *path = tpath("ids.tok");
    static const int32_t ids[] = {1, 2, 99, 100};
    ck_assert_int_eq(tokfile_writer_open(&w, path, 2, 100, NULL, &e), RZ_OK);
    expect_err(tokfile_writer_append(&w, ids, 4, &e), &e, RZ_EDATA, "id 100 at token 3",
               "vocabulary of 100");
    tokfile_writer_abort(&w);
    tokfile_writer_abort(&w);
    only_file(NULL);
    /* The position counts across appends and buffer flushes (4096 uint16 ids a flush). */
    static int32_t many[6000];
    ck_assert_int_eq(tokfile_writer_open(&w, path, 2, 100, NULL, &e), RZ_OK);
    ck_assert_int_eq(tokfile_writer_append(&w, ids, 3, &e), RZ_OK);
    many[5000] = 100;
    expect_err(tokfile_writer_append(&w, many, 6000, &e), &e, RZ_EDATA, "id 100 at token 5003",
               NULL);
    tokfile_writer_abort(&w);
    only_file(NULL);
    static const int32_t neg[] = {-1};
    ck_assert_int_eq(tokfile_writer_open(&w, path, 4, 100, NULL, &e), RZ_OK);
    expect_err(tokfile_writer_append(&w, neg, 1, &e), &e, RZ_EDATA, "id -1 at token 0", NULL);
    tokfile_writer_abort(&w);
    only_file(NULL);
    expect_err(tokfile_writer_open(&w, path, 2, 70000, NULL, &e), &e, RZ_ECONFIG, "ids.tok",
               "70000");
    tokfile_writer_abort(&w); /* after a failed open: nothing */
    expect_err(tokfile_writer_open(&w, path, 3, 100, NULL, &e), &e, RZ_ECONFIG, "width 3", NULL);
    expect_err(tokfile_writer_open(&w, tpath("no-dir/x.tok"), 2, 100, NULL, &e), &e, RZ_EIO,
               "no-dir/x.tok", NULL);
    only_file(NULL);
}
END_TEST

/* A full disk, as the kernel reports a file-size limit (EFBIG): RZ_EIO naming the file, no
 * token file and no temporary file left.  The limit is set in Check's forked child and lifted
 * again for CK_FORK=no. */
START_TEST(tokfile_disk_full_leaves_nothing)
{
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = 4096;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    static int32_t ids[20000];
    for (size_t i = 0; i < RZ_ARRAY_LEN(ids); i++)
        ids[i] = (int32_t)(i % 1000);
    struct tokfile_writer w;
    struct rz_err e = {0};
    const char *path = tpath("full.tok");
    enum rz_status st = tokfile_writer_open(&w, path, 2, 1000, NULL, &e);
    if (st == RZ_OK)
        st = tokfile_writer_append(&w, ids, RZ_ARRAY_LEN(ids), &e);
    if (st == RZ_OK)
        st = tokfile_writer_commit(&w, NULL, &e);
    else
        tokfile_writer_abort(&w);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    expect_err(st, &e, RZ_EIO, "full.tok", strerror(EFBIG));
    only_file(NULL);
}
END_TEST

static void put_text(const char *path, const char *text) { put_bytes(path, text, strlen(text)); }

static enum rz_status read_manifest(const char *path, struct rz_err *e)
{
    struct manifest *m = (struct manifest *)(void *)e; /* must be reset to NULL */
    enum rz_status st = manifest_read(path, &m, e);
    if (st != RZ_OK)
        ck_assert_ptr_null(m);
    manifest_free(m);
    return st;
}

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

START_TEST(manifest_refuses_bad_keys)
{
    struct rz_err e = {0};
    const char *p = tpath("m.json");
    static const struct {
        const char *text, *key;
    } cases[] = {
        {"{\"version\":1}", "'format' is missing"},
        {"{\"format\":\"other\",\"version\":1}", "'format' is \"other\""},
        {"{\"format\":\"ryzen-data manifest\",\"version\":2}", "'version' is 2"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"\","
         "\"id_width\":2,\"tokens\":0,\"shards\":[]}", "'vocab_size' is missing"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"xy\","
         "\"vocab_size\":9,\"id_width\":2,\"tokens\":0}", "'tokenizer_sha256'"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"\","
         "\"vocab_size\":9,\"id_width\":3,\"tokens\":0}", "'id_width' is 3"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"\","
         "\"vocab_size\":9,\"id_width\":2,\"tokens\":-1}", "'tokens' is not a whole number"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"\","
         "\"vocab_size\":9,\"id_width\":2,\"tokens\":0}", "'shards' is missing"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"\","
         "\"vocab_size\":9,\"id_width\":2,\"tokens\":3,\"shards\":[{\"path\":\"a\",\"tokens\":3,"
         "\"bytes\":134}]}", "'shards[0].sha256' is missing"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"\","
         "\"vocab_size\":9,\"id_width\":2,\"tokens\":3,\"shards\":[{\"path\":\"a\",\"tokens\":3,"
         "\"bytes\":135,\"sha256\":\"" SHA_A "\"}]}", "'shards[0].bytes' is 135"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"\","
         "\"vocab_size\":9,\"id_width\":2,\"tokens\":4,\"shards\":[{\"path\":\"a\",\"tokens\":3,"
         "\"bytes\":134,\"sha256\":\"" SHA_A "\"}]}", "add up to 3"},
        {"{\"format\":\"ryzen-data manifest\",\"version\":1,\"tokenizer_sha256\":\"\","
         "\"vocab_size\":9,\"id_width\":2,\"tokens\":3,\"shards\":[{\"tokens\":3}]}",
         "'shards[0].path' is missing"},
        {"[1]", "not a JSON object"},
    };
    for (size_t i = 0; i < RZ_ARRAY_LEN(cases); i++) {
        put_text(p, cases[i].text);
        expect_err(read_manifest(p, &e), &e, RZ_EDATA, "m.json", cases[i].key);
    }
    put_text(p, "{\"format\": ");
    expect_err(read_manifest(p, &e), &e, RZ_EDATA, "m.json", NULL);
    expect_err(read_manifest(tpath("none.json"), &e), &e, RZ_EIO, "none.json", NULL);
}
END_TEST

/* A shard changed in place (same size), resized, missing, or of another tokenizer: each named. */
START_TEST(manifest_verify_names_the_shard)
{
    struct rz_err e = {0};
    struct tokfile_header h;
    struct manifest *m = three_shards(tpath("manifest.json"));
    const char *s1 = m->shards[1].full_path;
    size_t n;
    unsigned char *buf = slurp(s1, &n);
    buf[n - 1] ^= 1;
    put_bytes(s1, buf, n);
    ck_assert_int_eq(manifest_check_shard(m, 1, &h, &e), RZ_OK); /* the cheap check passes */
    expect_err(manifest_verify(m, &e), &e, RZ_EDATA, "shard-00001.tok", "changed: its SHA-256");
    buf[n - 1] ^= 1;
    put_bytes(s1, buf, n - 2);
    expect_err(manifest_verify(m, &e), &e, RZ_EDATA, "shard-00001.tok", "changed size");
    ck_assert_msg(strstr(e.msg, "says 142 bytes, the file has 140"), "%s", e.msg);
    unlink(s1);
    expect_err(manifest_verify(m, &e), &e, RZ_EDATA, "shard-00001.tok", "missing");
    expect_err(manifest_check_shard(m, 1, &h, &e), &e, RZ_EDATA, "(2 of 3", "missing");
    put_bytes(s1, buf, n);
    ck_assert_msg(manifest_verify(m, &e) == RZ_OK, "%s", e.msg);
    free(buf);
    /* The manifest's claims against the shard's own header. */
    m->vocab_size = 1024;
    expect_err(manifest_verify(m, &e), &e, RZ_EDATA, "shard-00000.tok", "vocabulary 512");
    m->vocab_size = 512;
    memset(m->tokenizer_sha256, 'b', 64);
    expect_err(manifest_verify(m, &e), &e, RZ_EDATA, "shard-00000.tok", "bbbbbbbb");
    manifest_free(m);
}
END_TEST

START_TEST(manifest_write_refuses_an_inconsistent_one)
{
    char name[] = "a.tok";
    struct manifest_shard sh = {.path = name, .tokens = 3, .bytes = 134};
    struct manifest m = {.vocab_size = 9, .id_width = 2, .tokens = 4, .n_shards = 1,
                         .shards = &sh};
    struct rz_err e = {0};
    expect_err(manifest_write(tpath("m.json"), &m, &e), &e, RZ_EDATA, "m.json", "add up to 3");
    m.n_shards = 0;
    expect_err(manifest_write(tpath("m.json"), &m, &e), &e, RZ_EDATA, "no shards", NULL);
    m.n_shards = 1;
    m.tokens = 3;
    expect_err(manifest_write(tpath("no-dir/m.json"), &m, &e), &e, RZ_EIO, "no-dir/m.json",
               NULL);
    only_file(NULL);
}
END_TEST

TCase *record_tok_tcase(void)
{
    TCase *tc = rz_test_tcase("tokfile_manifest");
    tcase_add_checked_fixture(tc, tok_setup, tok_teardown);
    tcase_add_test(tc, tokfile_round_trip);
    tcase_add_test(tc, tokfile_empty_and_no_tokenizer);
    tcase_add_test(tc, tokfile_header_layout);
    tcase_add_test(tc, manifest_round_trip);
    return tc;
}

TCase *record_tok_errors_tcase(void)
{
    TCase *tc = rz_test_tcase("errors_tokfile_manifest");
    tcase_add_checked_fixture(tc, tok_setup, tok_teardown);
    tcase_add_test(tc, tokfile_bad_headers);
    tcase_add_test(tc, tokfile_writer_refuses_bad_ids);
    tcase_add_test(tc, tokfile_disk_full_leaves_nothing);
    tcase_add_test(tc, manifest_refuses_bad_keys);
    tcase_add_test(tc, manifest_verify_names_the_shard);
    tcase_add_test(tc, manifest_write_refuses_an_inconsistent_one);
    return tc;
}
