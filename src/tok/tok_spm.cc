// tok_spm.cc: the tokenizer of tok.h on SentencePiece (Debian's libsentencepiece-dev, 0.1.97),
// the one C++ file of the project.  It owns: training a BPE or unigram model with byte fallback
// into PREFIX.model and PREFIX.vocab (written durably), loading a model with its SHA-256, the
// split of a text into lines and into what SentencePiece may see and what becomes byte pieces,
// and our own decoding from a per-id table of bytes.
//
// Deliberately not here: token files and their headers (record/tokfile.h), threads (the caller
// cuts a text at line ends and runs tok_encode on several threads; see tok.h), progress output.
//
// What SentencePiece sees.  The models are trained with the identity normalizer, no dummy
// prefix and no removal of extra whitespace, so that SentencePiece maps a valid UTF-8 string to
// pieces whose text, with U+2581 read as a space, is that string again.  Three kinds of bytes
// never reach it and are written as their own <0xNN> pieces instead, so that the round trip is
// exact for any bytes:
//  - bytes that are not part of valid UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
//    above U+10FFFF), which SentencePiece's normalizer would turn into U+FFFD;
//  - U+2581 itself, which SentencePiece uses for the space and which would decode as a space;
//  - NUL, which its trainer drops.
// The newline is the line separator and is written as <0x0A>.  A line is thus a series of
// segments (the runs SentencePiece sees) and byte pieces, and a text encodes to the same ids
// whether given whole or cut at line ends.  Training reads the corpus with the same split
// (corpus_iter), so the trainer learns from exactly the segments that encoding will give it.
//
// Errors: every SentencePiece call that returns a util::Status goes through SPM_CHECK; no C++
// exception leaves this file (tok_guard: std::bad_alloc is RZ_ENOMEM, anything else
// RZ_EBACKEND).  A corpus or model file that cannot be opened is bad input (RZ_EDATA, exit 64:
// the message names the file); a read or write that fails after that is RZ_EIO.
//
// Threads: tok_encode and tok_decode only read the struct tok; SentencePieceProcessor::Encode
// is const and keeps its state on the stack (tests/check_tok.c encodes on two threads at once).
// tok_train is not reentrant: SentencePiece's log level and random seed are process-wide.
#include "config.h"

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/types.h>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

// The core headers have no extern "C" of their own; tok.h includes core/status.h, so they come
// first.
extern "C" {
#include "core/durable.h"
#include "core/sha256.h"
#include "core/status.h"
}

#include "tok/tok.h"

namespace {

namespace spm = sentencepiece;

// The one checked call of SentencePiece: on a failed util::Status, records `status`, the object
// (a printf-style description: the file), the call's text, SentencePiece's own message and
// file:line in `err`, and returns the status from the calling function (C++ cleans up by RAII).
#define SPM_CHECK(call, status, ...)                                                              \
    do {                                                                                          \
        const spm::util::Status spm_st_ = (call);                                                 \
        if (!spm_st_.ok()) {                                                                      \
            char spm_what_[1024];                                                                 \
            snprintf(spm_what_, sizeof spm_what_, __VA_ARGS__);                                   \
            return rz_fail(err, (status), "%s: SentencePiece %s failed: %s (%s:%d)", spm_what_,   \
                           #call, spm_st_.ToString().c_str(), __FILE__, __LINE__);                \
        }                                                                                         \
    } while (0)

const int kByteTokens = 256;
const int kMetaPieces = 3;         // <unk>, <s>, </s>
const char kSpace[] = "\xe2\x96\x81"; // U+2581, SentencePiece's space
const char kUnknownText[] = "\xef\xbf\xbd"; // U+FFFD, what <unk> decodes to

// The length of the valid UTF-8 sequence at s[0..n) (RFC 3629), 0 when s[0] does not start one.
size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; // the range of the second byte
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; // no overlong forms
        else if (c == 0xed)
            hi = 0x9f; // no surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f; // nothing above U+10FFFF
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

// How many bytes at s[0..n) SentencePiece may see as one character: the UTF-8 length, or 0
// when they are to be byte pieces (invalid UTF-8: only s[0]; NUL; U+2581: its three bytes).
size_t spm_char_len(const unsigned char *s, size_t n, size_t *byte_run)
{
    size_t len = utf8_len(s, n);
    *byte_run = 1;
    if (len == 0)
        return 0;
    if (s[0] == 0)
        return 0;
    if (len == 3 && memcmp(s, kSpace, 3) == 0) {
        *byte_run = 3;
        return 0;
    }
    return len;
}

// Calls fn(segment) for each run of a line that SentencePiece may see and byte(b) for each byte
// that is to be a byte piece, in order.  `line` holds no '\n'.
template <typename Seg, typename Byte>
bool split_line(const char *line, size_t n, Seg seg, Byte byte)
{
    const unsigned char *s = reinterpret_cast<const unsigned char *>(line);
    size_t start = 0, i = 0;
    while (i < n) {
        if (s[i] >= 0x01 && s[i] < 0x80) { // ASCII but NUL: the common case
            i++;
            continue;
        }
        size_t run;
        size_t len = spm_char_len(s + i, n - i, &run);
        if (len > 0) {
            i += len;
            continue;
        }
        if (i > start && !seg(line + start, i - start))
            return false;
        for (size_t k = 0; k < run; k++)
            if (!byte(s[i + k]))
                return false;
        i += run;
        start = i;
    }
    return i == start || seg(line + start, i - start);
}

// Runs fn and turns a C++ exception into a status: nothing is thrown across the C interface.
template <typename Fn>
enum rz_status tok_guard(struct rz_err *err, const char *what, Fn fn)
{
    try {
        return fn();
    } catch (const std::bad_alloc &) {
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", what);
    } catch (const std::exception &e) {
        return rz_fail(err, RZ_EBACKEND, "%s: %s", what, e.what());
    } catch (...) {
        return rz_fail(err, RZ_EBACKEND, "%s: unknown C++ exception", what);
    }
}

} // namespace

struct tok {
    spm::SentencePieceProcessor sp;
    std::string path;
    uint8_t sha[32];
    char sha_hex[65];
    int64_t vocab;
    int unk_id;
    int32_t byte_id[kByteTokens];      // the id of piece <0xNN>
    std::vector<std::string> text;      // the bytes each id decodes to
};

/* ---------------------------------------------------------------------------------------------
 * Training */

namespace {

// The corpus for the trainer, file after file, line after line, each line cut as tok_encode
// cuts it (split_line): the trainer sees exactly the segments that encoding will pass on.
class corpus_iter : public spm::SentenceIterator {
  public:
    corpus_iter(const char *const *inputs, size_t n) : inputs_(inputs), n_(n) { Next(); }
    ~corpus_iter() override
    {
        if (f_ != nullptr)
            fclose(f_);
        free(line_);
    }
    bool done() const override { return done_; }
    const std::string &value() const override { return segs_[pos_]; }
    void Next() override
    {
        if (++pos_ < segs_.size())
            return;
        segs_.clear();
        pos_ = 0;
        while (segs_.empty() && !done_)
            read_line();
    }
    spm::util::Status status() const override
    {
        if (failure_ != RZ_OK)
            return spm::util::Status(spm::util::StatusCode::kDataLoss, message_);
        if (segments_ == 0)
            return spm::util::Status(spm::util::StatusCode::kInvalidArgument,
                                     "the corpus has no text (" + std::to_string(lines_) +
                                         " lines, none with a valid UTF-8 character)");
        return spm::util::Status();
    }
    enum rz_status failure() const { return failure_ != RZ_OK ? failure_ : RZ_EDATA; }
    int64_t lines() const { return lines_; }

  private:
    void fail(enum rz_status st, const std::string &msg)
    {
        failure_ = st;
        message_ = msg;
        done_ = true;
    }
    bool open_next()
    {
        if (f_ != nullptr)
            fclose(f_);
        f_ = nullptr;
        if (file_ == n_)
            return false;
        f_ = fopen(inputs_[file_++], "rb");
        if (f_ == nullptr)
            fail(RZ_EDATA, std::string("open corpus '") + inputs_[file_ - 1] + "': " +
                               strerror(errno));
        return f_ != nullptr;
    }
    void read_line()
    {
        if (f_ == nullptr && !open_next()) {
            done_ = true;
            return;
        }
        ssize_t got = getline(&line_, &cap_, f_);
        if (got < 0) {
            if (ferror(f_)) {
                fail(RZ_EIO, std::string("read corpus '") + inputs_[file_ - 1] + "': " +
                                 rz_io_cause(errno));
                return;
            }
            if (!open_next() && failure_ == RZ_OK)
                done_ = true;
            return;
        }
        size_t n = static_cast<size_t>(got);
        if (n > 0 && line_[n - 1] == '\n')
            n--;
        lines_++;
        split_line(
            line_, n,
            [this](const char *s, size_t len) {
                segs_.emplace_back(s, len);
                segments_++;
                return true;
            },
            [](unsigned char) { return true; });
    }

    const char *const *inputs_;
    size_t n_, file_ = 0;
    FILE *f_ = nullptr;
    char *line_ = nullptr;
    size_t cap_ = 0;
    std::vector<std::string> segs_;
    size_t pos_ = 0;
    bool done_ = false;
    int64_t lines_ = 0, segments_ = 0;
    enum rz_status failure_ = RZ_OK;
    std::string message_;
};

enum rz_status check_train_opts(const struct tok_train_opts *o, struct rz_err *err)
{
    const int64_t min_vocab = kByteTokens + kMetaPieces + 1;
    if (o->n_inputs == 0 || o->inputs == nullptr)
        return rz_fail(err, RZ_ECONFIG, "tokenizer train: no corpus file given");
    if (o->model_prefix == nullptr || o->model_prefix[0] == '\0')
        return rz_fail(err, RZ_ECONFIG, "tokenizer train: no output prefix given");
    if (o->vocab_size < min_vocab || o->vocab_size > INT32_MAX)
        return rz_fail(err, RZ_ECONFIG,
                       "tokenizer train: vocabulary size %" PRId64 " is out of range: it must be "
                       "at least %" PRId64 " (%d byte pieces, <unk>, <s>, </s> and one more) and "
                       "at most %d",
                       o->vocab_size, min_vocab, kByteTokens, INT32_MAX);
    const char *type = o->model_type != nullptr ? o->model_type : "bpe";
    if (strcmp(type, "bpe") != 0 && strcmp(type, "unigram") != 0)
        return rz_fail(err, RZ_ECONFIG,
                       "tokenizer train: model type '%s' is not one of bpe, unigram", type);
    if (o->threads < 0 || o->max_sentences < 0)
        return rz_fail(err, RZ_ECONFIG, "tokenizer train: threads (%d) and max sentences "
                                        "(%" PRId64 ") must not be negative",
                       o->threads, o->max_sentences);
    for (size_t i = 0; i < o->n_inputs; i++) {
        FILE *f = fopen(o->inputs[i], "rb");
        if (f == nullptr)
            return rz_fail(err, RZ_EDATA, "tokenizer train: open corpus '%s': %s", o->inputs[i],
                           strerror(errno));
        fclose(f);
    }
    return RZ_OK;
}

// The trainer's options (sentencepiece_model.proto's TrainerSpec and NormalizerSpec fields).
// No model_prefix: the trainer hands the model back, and train() writes it (write_durably).
std::unordered_map<std::string, std::string> train_args(const struct tok_train_opts *o)
{
    std::unordered_map<std::string, std::string> a;
    a["model_type"] = o->model_type != nullptr ? o->model_type : "bpe";
    a["vocab_size"] = std::to_string(o->vocab_size);
    a["byte_fallback"] = "true";
    // The rarest 0.05% of characters get no piece of their own and are written as byte
    // pieces.  With 1.0 every character seen once takes a piece, and a corpus with more distinct
    // characters than the vocabulary has room for cannot be trained at all.  The fortunes
    // corpus at 4096 BPE: 2.855 bytes per token against 2.853 with 1.0, both exact round trips.
    a["character_coverage"] = "0.9995";
    a["normalization_rule_name"] = "identity";
    a["add_dummy_prefix"] = "false";
    a["remove_extra_whitespaces"] = "false";
    a["split_digits"] = "true";
    a["allow_whitespace_only_pieces"] = "true";
    a["num_threads"] = std::to_string(o->threads > 0 ? o->threads : 1);
    if (o->max_sentences > 0)
        a["input_sentence_size"] = std::to_string(o->max_sentences);
    a["shuffle_input_sentence"] = "true";
    // 0 INFO (the trainer's progress), 1 WARNING and above.
    a["minloglevel"] = o->verbose ? "0" : "1";
    return a;
}

// PREFIX.vocab as spm_train writes it: "piece<TAB>score" per id, the score as an ostream
// prints a float.
enum rz_status vocab_text(std::string *text, const std::string &model, const std::string &path,
                          struct rz_err *err)
{
    spm::SentencePieceProcessor sp;
    SPM_CHECK(sp.LoadFromSerializedProto(model), RZ_EBACKEND,
              "tokenizer train: the new model for '%s'", path.c_str());
    std::ostringstream out;
    for (int id = 0; id < sp.GetPieceSize(); id++)
        out << sp.IdToPiece(id) << '\t' << sp.GetScore(id) << '\n';
    *text = out.str();
    return RZ_OK;
}

// Writes `bytes` to `path` durably (core/durable.h): the old file or the new one, never half.
enum rz_status write_durably(const std::string &path, const std::string &bytes,
                             struct rz_err *err)
{
    struct rz_durable d;
    enum rz_status st = rz_durable_open(&d, path.c_str(), "tok", err);
    if (st != RZ_OK)
        return st;
    if (fwrite(bytes.data(), 1, bytes.size(), d.f) != bytes.size()) {
        int saved = errno;
        rz_durable_abort(&d);
        return rz_fail(err, RZ_EIO, "write '%s': %s", path.c_str(), rz_io_cause(saved));
    }
    return rz_durable_commit(&d, err);
}

enum rz_status train(const struct tok_train_opts *o, struct rz_err *err)
{
    enum rz_status st = check_train_opts(o, err);
    if (st != RZ_OK)
        return st;
    const std::string model_path = std::string(o->model_prefix) + ".model";
    const std::string vocab_path = std::string(o->model_prefix) + ".vocab";
    std::string files = o->inputs[0];
    if (o->n_inputs > 1)
        files += " and " + std::to_string(o->n_inputs - 1) + " more";
    corpus_iter corpus(o->inputs, o->n_inputs);
    // The same corpus and options train the same model, byte for byte (the sample is seeded).
    spm::SetRandomGeneratorSeed(39u);
    std::string model;
    SPM_CHECK(spm::SentencePieceTrainer::Train(train_args(o), &corpus, &model), corpus.failure(),
              "tokenizer train on corpus %s (lines read: %" PRId64 ") for '%s'", files.c_str(),
              corpus.lines(), model_path.c_str());
    std::string vocab;
    st = vocab_text(&vocab, model, model_path, err);
    // The vocabulary first, so that a new PREFIX.model never stands beside an old PREFIX.vocab.
    if (st == RZ_OK)
        st = write_durably(vocab_path, vocab, err);
    if (st == RZ_OK)
        st = write_durably(model_path, model, err);
    return st;
}

} // namespace

enum rz_status tok_train(const struct tok_train_opts *o, struct rz_err *err)
{
    return tok_guard(err, "tokenizer train", [&] { return train(o, err); });
}

/* ---------------------------------------------------------------------------------------------
 * Loading */

namespace {

enum rz_status read_model(const char *path, std::string *bytes, struct rz_err *err)
{
    FILE *f = fopen(path, "rb");
    if (f == nullptr)
        return rz_fail(err, RZ_EDATA, "tokenizer model '%s': cannot open: %s", path,
                       strerror(errno));
    char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        bytes->append(buf, got);
    int bad = ferror(f) ? errno : 0;
    fclose(f);
    if (bad != 0)
        return rz_fail(err, RZ_EIO, "tokenizer model '%s': read: %s", path, rz_io_cause(bad));
    return RZ_OK;
}

// The bytes each id decodes to: a byte piece its byte, a control piece nothing, <unk> U+FFFD,
// any other piece its text with U+2581 as a space.
enum rz_status build_tables(struct tok *t, struct rz_err *err)
{
    const char *path = t->path.c_str();
    t->text.resize(static_cast<size_t>(t->vocab));
    for (int b = 0; b < kByteTokens; b++)
        t->byte_id[b] = -1;
    for (int id = 0; id < t->vocab; id++) {
        const std::string &piece = t->sp.IdToPiece(id);
        std::string &out = t->text[static_cast<size_t>(id)];
        unsigned b = 0;
        if (t->sp.IsByte(id) && sscanf(piece.c_str(), "<0x%2X>", &b) == 1 && b < 256) {
            out.assign(1, static_cast<char>(b));
            t->byte_id[b] = id;
        } else if (t->sp.IsUnknown(id))
            out = kUnknownText;
        else if (!t->sp.IsControl(id)) {
            for (size_t i = 0; i < piece.size(); i++) {
                if (piece.compare(i, 3, kSpace) == 0) {
                    out += ' ';
                    i += 2;
                } else
                    out += piece[i];
            }
        }
    }
    for (int b = 0; b < kByteTokens; b++)
        if (t->byte_id[b] < 0)
            return rz_fail(err, RZ_EDATA,
                           "tokenizer model '%s' has no byte piece <0x%02X>: it was not trained "
                           "with byte fallback (ryzen-data tokenizer train)",
                           path, static_cast<unsigned>(b));
    return RZ_OK;
}

// A model whose normalizer changes text (NFKC, a dummy prefix, squeezed spaces) cannot give an
// exact round trip: refuse it at load rather than corrupt text later.
enum rz_status check_identity(struct tok *t, struct rz_err *err)
{
    static const char probe[] = " A  b\tc\xef\xac\x81 "; // U+FB01, which NFKC rewrites
    struct tok_ids ids = {nullptr, 0, 0};
    char *back = nullptr;
    size_t len = 0;
    enum rz_status st = tok_encode(t, probe, sizeof probe - 1, &ids, err);
    if (st == RZ_OK)
        st = tok_decode(t, ids.ids, ids.n, &back, &len, err);
    if (st == RZ_OK && (len != sizeof probe - 1 || memcmp(back, probe, len) != 0))
        st = rz_fail(err, RZ_EDATA,
                     "tokenizer model '%s' normalizes text (\"%s\" came back as \"%s\"): it "
                     "needs the identity normalizer without a dummy prefix (ryzen-data "
                     "tokenizer train)",
                     t->path.c_str(), probe, back);
    free(back);
    tok_ids_free(&ids);
    return st;
}

enum rz_status load(struct tok *t, const char *path, struct rz_err *err)
{
    t->path = path;
    std::string bytes;
    enum rz_status st = read_model(path, &bytes, err);
    if (st != RZ_OK)
        return st;
    if (bytes.empty())
        return rz_fail(err, RZ_EDATA, "tokenizer model '%s' is empty", path);
    struct rz_sha256 h;
    rz_sha256_init(&h);
    rz_sha256_update(&h, bytes.data(), bytes.size());
    rz_sha256_final(&h, t->sha);
    rz_sha256_to_hex(t->sha, t->sha_hex);
    SPM_CHECK(t->sp.LoadFromSerializedProto(bytes), RZ_EDATA,
              "tokenizer model '%s' is not a SentencePiece model", path);
    t->vocab = t->sp.GetPieceSize();
    t->unk_id = t->sp.unk_id();
    st = build_tables(t, err);
    return st != RZ_OK ? st : check_identity(t, err);
}

} // namespace

enum rz_status tok_load(struct tok **out, const char *model_path, struct rz_err *err)
{
    *out = nullptr;
    struct tok *t = nullptr;
    enum rz_status st = tok_guard(err, "tokenizer load", [&] {
        t = new struct tok();
        return load(t, model_path, err);
    });
    if (st != RZ_OK) {
        delete t;
        return st;
    }
    *out = t;
    return RZ_OK;
}

void tok_free(struct tok *t)
{
    delete t;
}

int64_t tok_vocab_size(const struct tok *t)
{
    return t->vocab;
}

void tok_sha256(const struct tok *t, uint8_t out[32])
{
    memcpy(out, t->sha, sizeof t->sha);
}

const char *tok_sha256_hex(const struct tok *t)
{
    return t->sha_hex;
}

const char *tok_model_path(const struct tok *t)
{
    return t->path.c_str();
}

/* ---------------------------------------------------------------------------------------------
 * Encoding and decoding */

void tok_ids_free(struct tok_ids *v)
{
    if (v == nullptr)
        return;
    free(v->ids);
    v->ids = nullptr;
    v->n = v->cap = 0;
}

namespace {

bool ids_reserve(struct tok_ids *v, size_t more)
{
    if (v->cap - v->n >= more)
        return true;
    size_t cap = v->cap > 0 ? v->cap : 256;
    while (cap - v->n < more)
        cap *= 2;
    void *p = realloc(v->ids, cap * sizeof *v->ids);
    if (p == nullptr)
        return false;
    v->ids = static_cast<int32_t *>(p);
    v->cap = cap;
    return true;
}

bool ids_push(struct tok_ids *v, int32_t id)
{
    if (!ids_reserve(v, 1))
        return false;
    v->ids[v->n++] = id;
    return true;
}

// One segment through SentencePiece, its ids appended to out.
enum rz_status encode_segment(const struct tok *t, const char *s, size_t n,
                              std::vector<int> *ids, struct tok_ids *out, size_t offset,
                              struct rz_err *err)
{
    ids->clear();
    SPM_CHECK(t->sp.Encode(absl::string_view(s, n), ids), RZ_EBACKEND,
              "tokenizer '%s': encode %zu bytes at offset %zu", t->path.c_str(), n, offset);
    if (!ids_reserve(out, ids->size()))
        return rz_fail(err, RZ_ENOMEM, "tokenizer '%s': encode: out of memory",
                       t->path.c_str());
    for (int id : *ids) {
        // Byte fallback leaves no character unknown; an <unk> here is a broken model.
        if (id == t->unk_id)
            return rz_fail(err, RZ_EBACKEND,
                           "tokenizer '%s': SentencePiece gave <unk> for the text at offset %zu",
                           t->path.c_str(), offset);
        out->ids[out->n++] = id;
    }
    return RZ_OK;
}

enum rz_status encode(const struct tok *t, const char *text, size_t len, struct tok_ids *out,
                      struct rz_err *err)
{
    std::vector<int> ids;
    enum rz_status st = RZ_OK;
    size_t pos = 0;
    while (pos < len && st == RZ_OK) {
        const char *nl = static_cast<const char *>(memchr(text + pos, '\n', len - pos));
        size_t end = nl != nullptr ? static_cast<size_t>(nl - text) : len;
        bool ok = split_line(
            text + pos, end - pos,
            [&](const char *s, size_t n) {
                st = encode_segment(t, s, n, &ids, out, static_cast<size_t>(s - text), err);
                return st == RZ_OK;
            },
            [&](unsigned char b) {
                if (!ids_push(out, t->byte_id[b]))
                    st = rz_fail(err, RZ_ENOMEM, "tokenizer '%s': encode: out of memory",
                                 t->path.c_str());
                return st == RZ_OK;
            });
        if (ok && nl != nullptr && !ids_push(out, t->byte_id['\n']))
            st = rz_fail(err, RZ_ENOMEM, "tokenizer '%s': encode: out of memory",
                         t->path.c_str());
        pos = nl != nullptr ? end + 1 : len;
    }
    return st;
}

} // namespace

enum rz_status tok_encode(const struct tok *t, const char *text, size_t len, struct tok_ids *out,
                          struct rz_err *err)
{
    const size_t n0 = out->n;
    enum rz_status st = tok_guard(err, "tokenizer encode", [&] {
        return encode(t, text, len, out, err);
    });
    if (st != RZ_OK)
        out->n = n0; // nothing appended on failure
    return st;
}

enum rz_status tok_decode(const struct tok *t, const int32_t *ids, size_t n, char **text,
                          size_t *len, struct rz_err *err)
{
    *text = nullptr;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab)
            return rz_fail(err, RZ_EDATA,
                           "tokenizer '%s': decode: token id %" PRId32 " at position %zu is "
                           "outside the vocabulary [0, %" PRId64 ")",
                           t->path.c_str(), ids[i], i, t->vocab);
        total += t->text[static_cast<size_t>(ids[i])].size();
    }
    char *buf = static_cast<char *>(malloc(total + 1));
    if (buf == nullptr)
        return rz_fail(err, RZ_ENOMEM, "tokenizer '%s': decode %zu bytes: out of memory",
                       t->path.c_str(), total);
    char *p = buf;
    for (size_t i = 0; i < n; i++) {
        const std::string &s = t->text[static_cast<size_t>(ids[i])];
        memcpy(p, s.data(), s.size());
        p += s.size();
    }
    *p = '\0';
    *text = buf;
    *len = total;
    return RZ_OK;
}
