/* train_net_cases.h: the test case check_train_net.c adds to check_train's suite (the end-of-run
 * read of a node's connections).  Test code only. */
#ifndef RZ_TESTS_TRAIN_NET_CASES_H
#define RZ_TESTS_TRAIN_NET_CASES_H

#include <check.h>

TCase *train_net_tcase(void);

#endif
