/*
 * podhost-log-driver: argv decoding, exactly as internal/logs/driver's
 * ParseArgs (url.ParseQuery of the one argument after "log-driver").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log_driver.h"

void fmt_err(char *dst, const char *fmt, ...)
{
	va_list ap;

	if (dst[0])
		return;
	va_start(ap, fmt);
	vsnprintf(dst, ERR_MAX, fmt, ap);
	va_end(ap);
}


static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * query_unescape decodes s[0:n] like Go's url.QueryUnescape into out (cap
 * bytes, NUL-terminated). Returns the decoded length, -1 for a malformed
 * escape, -2 if it does not fit.
 */
static long query_unescape(const char *s, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			if (i + 2 >= n || unhex(s[i + 1]) < 0 || unhex(s[i + 2]) < 0)
				return -1;
			c = unhex(s[i + 1]) << 4 | unhex(s[i + 2]);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (o + 1 >= cap) {
			out[o] = 0;
			return -2;
		}
		out[o++] = (char)c;
	}
	out[o] = 0;
	return (long)o;
}

/* parse_int is Go's strconv.ParseInt(s, 10, 64): [+-]digits, no overflow. */
static int parse_int(const char *s, long long *v)
{
	int neg = *s == '-';
	unsigned long long x = 0, lim = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;

	if (*s == '+' || *s == '-')
		s++;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (x > (lim - (unsigned long long)(*s - '0')) / 10)
			return -1;
		x = x * 10 + (unsigned long long)(*s - '0');
	}
	*v = neg ? (long long)(0 - x) : (long long)x;
	return 0;
}

/* set_value stores one decoded key=value; seen counts each known key. */
static int set_value(struct config *c, const char *key, const char *val, long vlen,
		     int seen[3], char *err)
{
	static const char *const keys[3] = {"path", "max-size", "max-files"};
	int k;

	for (k = 0; k < 3 && strcmp(key, keys[k]) != 0; k++)
		;
	if (k == 3)
		return fmt_err(err, "logdriver: args: unknown key \"%s\" (known: path, max-size, max-files)", key), -1;
	if (seen[k]++)
		return fmt_err(err, "logdriver: args: %s given more than once", key), -1;
	if (k == 0) {
		if (vlen == -2)
			c->path_err = ENAMETOOLONG;
		else if ((size_t)vlen != strlen(val))
			c->path_err = EINVAL;
		else
			memcpy(c->path, val, (size_t)vlen + 1);
		if (vlen == 0)
			return fmt_err(err, "logdriver: args: path missing"), -1;
		return 0;
	}
	if (vlen == 0) /* empty: the default, 0 */
		return 0;
	if (vlen < 0 || parse_int(val, k == 1 ? &c->max_size : &c->max_files) != 0)
		return fmt_err(err, "logdriver: args: %s: invalid number \"%.64s\"", key, val), -1;
	return 0;
}

/* parse_query is url.ParseQuery plus the driver's checks (ParseArgs). */
static int parse_query(const char *q, struct config *c, char *err)
{
	static char val[PATH_MAX];
	char key[32];
	int seen[3] = {0, 0, 0};

	while (*q) {
		const char *amp = strchr(q, '&'), *end = amp ? amp : q + strlen(q);
		const char *eq = memchr(q, '=', (size_t)(end - q)), *kend = eq ? eq : end;
		long vlen;

		if (memchr(q, ';', (size_t)(end - q)))
			return fmt_err(err, "logdriver: args: invalid semicolon separator in query"), -1;
		if (end > q) {
			vlen = query_unescape(q, (size_t)(kend - q), key, sizeof(key));
			if (vlen < 0)
				return fmt_err(err, "logdriver: args: %s key \"%.*s\"",
					       vlen == -1 ? "invalid URL escape in" : "unknown",
					       (int)(kend - q > 64 ? 64 : kend - q), q), -1;
			vlen = eq ? query_unescape(eq + 1, (size_t)(end - eq - 1), val, sizeof(val)) : 0;
			if (!eq)
				val[0] = 0;
			if (vlen == -1)
				return fmt_err(err, "logdriver: args: invalid URL escape in %.31s", key), -1;
			if (set_value(c, key, val, vlen, seen, err) != 0)
				return -1;
		}
		q = amp ? amp + 1 : end;
	}
	if (!seen[0])
		return fmt_err(err, "logdriver: args: path missing"), -1;
	return 0;
}

int parse_args(int argc, char **argv, struct config *c, char *err)
{
	if (argc != 3 || strcmp(argv[1], COMMAND) != 0)
		return fmt_err(err, "logdriver: usage: %s " COMMAND " <encoded config>"
			       " (the containerd shim runs it; got %d arguments)",
			       argc > 0 ? argv[0] : "podhost-log-driver", argc - 1), -1;
	return parse_query(argv[2], c, err);
}
