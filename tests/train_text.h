/* train_text.h: the test case check_train_text.c adds to check_train's suite (training on token
 * files with a header: the tokenizer in the records and the resume, the preflight's data
 * check).  Test code only. */
#ifndef RZ_TESTS_TRAIN_TEXT_H
#define RZ_TESTS_TRAIN_TEXT_H

#include <check.h>

TCase *train_text_tcase(void);

#endif
