/*
 * The test image's only process: waits for a signal and exits 0 on
 * SIGTERM/SIGINT, so `docker stop` ends it at once instead of waiting for
 * the kill timeout. Built with `gcc -static` into a FROM-scratch image,
 * because the test machines have no images and cannot pull any.
 */
#include <signal.h>
#include <unistd.h>

static void on_stop(int signal_number) {
    (void)signal_number;
    _exit(0);
}

int main(void) {
    signal(SIGTERM, on_stop);
    signal(SIGINT, on_stop);
    for (;;) {
        pause();
    }
}
