/* podhost-log-driver: shared declarations (see log_driver.c). */
#ifndef PODHOST_LOG_DRIVER_H
#define PODHOST_LOG_DRIVER_H

#include <limits.h>

#define COMMAND "log-driver" /* driver.Command */
#define ERR_MAX 512          /* error messages, truncated */

/* struct config is driver.Config, decoded from argv. */
struct config {
	char path[PATH_MAX];
	int path_err; /* errno the path gets at open (NUL byte, too long) */
	long long max_size;
	long long max_files;
};

/* fmt_err formats into dst (ERR_MAX bytes) unless it already holds one. */
void fmt_err(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * parse_args is driver.ParseArgs: argv must be [binary, "log-driver",
 * url-encoded path, max-size, max-files]. Returns 0, or -1 with the
 * reason in err.
 */
int parse_args(int argc, char **argv, struct config *c, char *err);

#endif
