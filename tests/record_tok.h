/* record_tok.h: the test cases check_record_tok.c adds to check_record's suite (the token file
 * and the data manifest, src/record/tokfile.c and manifest.c).  Test code only. */
#ifndef RZ_TESTS_RECORD_TOK_H
#define RZ_TESTS_RECORD_TOK_H

#include <check.h>

/* Round trips: token files of both widths, the manifest, its checks and sniffing. */
TCase *record_tok_tcase(void);
/* Every error path of the token file and the manifest. */
TCase *record_tok_errors_tcase(void);

#endif
