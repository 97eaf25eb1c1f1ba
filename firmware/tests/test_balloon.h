/* test=balloon: follow the virtio-balloon target set from the VMM's control socket. */
#ifndef TEST_BALLOON_H
#define TEST_BALLOON_H

const char *test_balloon(void);

#endif
