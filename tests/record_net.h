/* record_net.h: the test case check_record_net.c adds to check_record's suite (each link's loss
 * from both of its ends, src/record/summary.c summary_link_losses).  Test code only. */
#ifndef RZ_TESTS_RECORD_NET_H
#define RZ_TESTS_RECORD_NET_H

#include <check.h>

TCase *record_net_tcase(void);

#endif
