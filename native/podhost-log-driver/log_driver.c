/*
 * podhost-log-driver: the per-container log driver, in C for its memory
 * footprint (docs/decisions.md, decision 13). The containerd shim runs it
 * once per container task (cio.BinaryIO) as
 *
 *     podhost-log-driver log-driver <url-encoded path, max-size, max-files>
 *
 * with fd 3 = the container's stdout pipe, fd 4 = its stderr pipe, fd 5 =
 * the readiness pipe (closed once the log file is open) and SIGTERM as the
 * request to stop. It writes CRI-format records with size-based rotation.
 *
 * internal/logs/driver (Go) is the reference implementation: this program
 * must behave exactly like it (argv, record format, P/F splitting at
 * MaxLineSize, rotation, ready/EOF/SIGTERM handling, exit status);
 * internal/logs/driver/conformance_test.go runs both on the same inputs.
 * One thread: ppoll() on both pipes, one write(2) per record, so records
 * of the two streams never interleave. A failing write never stops the
 * draining of the pipes (the container must not block on a full pipe).
 * Memory is static and bounded: two line buffers and one record buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log_driver.h"

#define MAX_LINE 16384       /* driver.MaxLineSize */
#define TS_MAX 48            /* "2006-01-02T15:04:05.000000000-07:00" */
#define REC_MAX (TS_MAX + sizeof(" stdout P ") + MAX_LINE + 1)
#define ROTATED_MAX (PATH_MAX + 24) /* <path>.<n> */
#define DRAIN_TIMEOUT_MS 5000       /* driver.drainTimeout */
#define DIR_MODE 0755
#define FILE_MODE 0640
#define FD_STDOUT 3
#define FD_STDERR 4
#define FD_READY 5
#define EXIT_BAD_ARGS 2

struct writer {
	const struct config *cfg;
	int fd;      /* -1 after a failed rotation: writes fail, drain goes on */
	int discard; /* no log file: read and drop */
	long long size;
	char rec[REC_MAX];
};

struct stream {
	int fd;
	const char *name;
	int open;
	size_t len, scanned;
	char buf[MAX_LINE];
	char err[ERR_MAX]; /* the stream's first error */
};

static volatile sig_atomic_t stop_requested;

static void on_sigterm(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* ---- the CRI writer (driver.Writer) */

/* mkdir_all is Go's os.MkdirAll on p[0:len] (p is restored). */
static int mkdir_all(char *p, size_t len)
{
	struct stat st;
	char save = p[len];
	size_t i = len, j;
	int e = 0;

	p[len] = 0;
	if (stat(p, &st) == 0) {
		p[len] = save;
		return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	}
	p[len] = save;
	while (i > 0 && p[i - 1] == '/')
		i--;
	for (j = i; j > 0 && p[j - 1] != '/'; j--)
		;
	if (j > 1 && (e = mkdir_all(p, j - 1)) != 0)
		return e;
	p[len] = 0;
	if (mkdir(p, DIR_MODE) != 0) {
		e = errno;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			e = 0;
	}
	p[len] = save;
	return e;
}

static int writer_open(struct writer *w, char *err)
{
	const char *p = w->cfg->path;
	struct stat st;
	int fd;

	do
		fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, FILE_MODE);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return fmt_err(err, "logdriver: open %s: %s", p, strerror(errno)), -1;
	if (fstat(fd, &st) != 0) {
		fmt_err(err, "logdriver: stat %s: %s", p, strerror(errno));
		close(fd);
		return -1;
	}
	w->fd = fd;
	w->size = st.st_size;
	return 0;
}

/* writer_init is OpenWriter: the directory (0755), then the file (0640). */
static int writer_init(struct writer *w, const struct config *cfg, char *err)
{
	static char dir[PATH_MAX];
	const char *slash = strrchr(cfg->path, '/');
	size_t n;
	int e;

	w->cfg = cfg;
	w->fd = -1;
	if (cfg->path_err)
		return fmt_err(err, "logdriver: open log path: %s", strerror(cfg->path_err)), -1;
	if (!slash)
		return writer_open(w, err);
	n = (size_t)(slash - cfg->path);
	memcpy(dir, cfg->path, n);
	dir[n] = 0;
	if (n == 0)
		dir[n++] = '/', dir[n] = 0;
	if ((e = mkdir_all(dir, n)) != 0)
		return fmt_err(err, "logdriver: create log dir: mkdir %s: %s", dir, strerror(e)), -1;
	return writer_open(w, err);
}

/* rename_missing_ok renames <path>.from (from 0: <path>) to <path>.to. */
static int rename_missing_ok(const char *p, long long from, long long to, char *err)
{
	static char a[ROTATED_MAX], b[ROTATED_MAX];

	if (from == 0)
		snprintf(a, sizeof(a), "%s", p);
	else
		snprintf(a, sizeof(a), "%s.%lld", p, from);
	snprintf(b, sizeof(b), "%s.%lld", p, to);
	if (rename(a, b) != 0 && errno != ENOENT)
		return fmt_err(err, "logdriver: rotate: rename %s %s: %s", a, b, strerror(errno)), -1;
	return 0;
}

/* writer_rotate shifts <path>.i to .i+1, <path> to .1 and reopens <path>. */
static int writer_rotate(struct writer *w, char *err)
{
	const char *p = w->cfg->path;
	long long i;
	int rc = close(w->fd);

	w->fd = -1;
	if (rc != 0 && errno != EINTR)
		return fmt_err(err, "logdriver: close before rotation: %s", strerror(errno)), -1;
	if (w->cfg->max_files <= 0) {
		if (unlink(p) != 0 && errno != ENOENT)
			return fmt_err(err, "logdriver: rotate: remove %s: %s", p, strerror(errno)), -1;
		return writer_open(w, err);
	}
	for (i = w->cfg->max_files - 1; i >= 1; i--)
		if (rename_missing_ok(p, i, i + 1, err) != 0)
			return -1;
	if (rename_missing_ok(p, 0, 1, err) != 0)
		return -1;
	return writer_open(w, err);
}

static char *put_int(char *b, long v, int width)
{
	char *e = b + width;

	while (width-- > 0) {
		b[width] = (char)('0' + v % 10);
		v /= 10;
	}
	return e;
}

/* format_time is Go's t.AppendFormat(TimeFormat) for time.Now() (local). */
static size_t format_time(char *b)
{
	struct timespec ts;
	struct tm tm;
	char *p = b;
	long zone;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	p = put_int(p, tm.tm_year + 1900L, 4);
	*p++ = '-', p = put_int(p, tm.tm_mon + 1L, 2);
	*p++ = '-', p = put_int(p, tm.tm_mday, 2);
	*p++ = 'T', p = put_int(p, tm.tm_hour, 2);
	*p++ = ':', p = put_int(p, tm.tm_min, 2);
	*p++ = ':', p = put_int(p, tm.tm_sec, 2);
	*p++ = '.', p = put_int(p, ts.tv_nsec, 9);
	if (tm.tm_gmtoff == 0) {
		*p++ = 'Z';
		return (size_t)(p - b);
	}
	zone = tm.tm_gmtoff / 60;
	*p++ = zone < 0 ? '-' : '+';
	if (zone < 0)
		zone = -zone;
	p = put_int(p, zone / 60, 2);
	*p++ = ':', p = put_int(p, zone % 60, 2);
	return (size_t)(p - b);
}

/* write_all writes n bytes, retrying short writes and EINTR. */
static int write_all(int fd, const char *b, size_t n, long long *written)
{
	while (n > 0) {
		ssize_t k = write(fd, b, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : EIO;
		*written += k;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* writer_record is WriteRecord: one record, stamped now, one write(2). */
static void writer_record(struct writer *w, struct stream *s, int partial, const char *msg, size_t n)
{
	char *b = w->rec;
	size_t len;
	int e;

	if (w->discard)
		return;
	if (w->fd < 0) {
		fmt_err(s->err, "logdriver: write %s: file already closed", w->cfg->path);
		return;
	}
	len = format_time(b);
	b[len++] = ' ';
	memcpy(b + len, s->name, 6); /* "stdout" / "stderr" */
	len += 6;
	b[len++] = ' ';
	b[len++] = partial ? 'P' : 'F';
	b[len++] = ' ';
	memcpy(b + len, msg, n);
	len += n;
	b[len++] = '\n';
	if (w->cfg->max_size > 0 && w->size > 0 && w->size + (long long)len > w->cfg->max_size &&
	    writer_rotate(w, s->err) != 0)
		return;
	if ((e = write_all(w->fd, b, len, &w->size)) != 0)
		fmt_err(s->err, "logdriver: write %s: %s", w->cfg->path, strerror(e));
}

/* ---- the streams (driver.Writer.Copy with bufio.ReadSlice('\n')) */

/* stream_lines writes every complete line, then a full buffer as P. */
static void stream_lines(struct stream *s, struct writer *w)
{
	size_t start = 0;
	char *nl;

	while ((nl = memchr(s->buf + s->scanned, '\n', s->len - s->scanned)) != NULL) {
		size_t end = (size_t)(nl - s->buf), n = end - start;

		if (n > 0 && s->buf[end - 1] == '\r')
			n--;
		writer_record(w, s, 0, s->buf + start, n);
		start = s->scanned = end + 1;
	}
	if (start == 0 && s->len == MAX_LINE) {
		writer_record(w, s, 1, s->buf, MAX_LINE);
		start = MAX_LINE;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
	s->scanned = s->len;
}

/* stream_end: bytes without a newline at EOF become an F record. */
static void stream_end(struct stream *s, struct writer *w)
{
	if (s->len > 0)
		writer_record(w, s, 0, s->buf, s->len);
	s->len = s->scanned = 0;
	s->open = 0;
}

static void stream_read(struct stream *s, struct writer *w)
{
	ssize_t n = read(s->fd, s->buf + s->len, MAX_LINE - s->len);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0)
		fmt_err(s->err, "logdriver: read %s: %s", s->name, strerror(errno));
	if (n <= 0) {
		stream_end(s, w);
		return;
	}
	s->len += (size_t)n;
	stream_lines(s, w);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * pump copies both streams until EOF (copyStreams). After SIGTERM it
 * keeps copying for at most DRAIN_TIMEOUT_MS. Returns the exit status.
 */
static int pump(struct stream s[2], struct writer *w, const sigset_t *mask)
{
	long long deadline = -1;
	int i;

	while (s[0].open || s[1].open) {
		struct pollfd pf[2];
		struct timespec to, *top = NULL;
		nfds_t n = 0;

		if (stop_requested && deadline < 0)
			deadline = now_ms() + DRAIN_TIMEOUT_MS;
		if (deadline >= 0) {
			long long left = deadline - now_ms();

			if (left <= 0) {
				fprintf(stderr, "logdriver: streams not closed after stop request\n");
				return 1;
			}
			to.tv_sec = left / 1000, to.tv_nsec = left % 1000 * 1000000;
			top = &to;
		}
		for (i = 0; i < 2; i++)
			if (s[i].open)
				pf[n].fd = s[i].fd, pf[n].events = POLLIN, pf[n++].revents = 0;
		if (ppoll(pf, n, top, mask) < 0 && errno != EINTR) {
			fprintf(stderr, "logdriver: poll: %s\n", strerror(errno));
			return 1;
		}
		for (i = 0; i < (int)n; i++)
			if (pf[i].revents)
				stream_read(pf[i].fd == s[0].fd ? &s[0] : &s[1], w);
	}
	for (i = 0; i < 2; i++)
		if (s[i].err[0])
			fprintf(stderr, "%s\n", s[i].err);
	return s[0].err[0] || s[1].err[0];
}

/* setup_signals: SIGTERM only arrives inside ppoll (no lost wake-up). */
static void setup_signals(sigset_t *poll_mask)
{
	struct sigaction sa;
	sigset_t term;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigterm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN; /* a write error is reported, never fatal */
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, poll_mask);
	sigdelset(poll_mask, SIGTERM);
}

/* keep_std_fds: like the Go runtime, open /dev/null on closed fds 0-2 so
 * the log file never becomes stderr. */
static void keep_std_fds(void)
{
	int fd;

	for (fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
			if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0)
				return;
}

static struct config cfg;
static struct writer w;
static struct stream streams[2] = {
	{.fd = FD_STDOUT, .name = "stdout", .open = 1},
	{.fd = FD_STDERR, .name = "stderr", .open = 1},
};

int main(int argc, char **argv)
{
	static char err[ERR_MAX];
	sigset_t mask;
	int bad_args, rc;

	keep_std_fds();
	setup_signals(&mask);
	bad_args = parse_args(argc, argv, &cfg, err) != 0;
	if (bad_args) {
		fprintf(stderr, "%s\n", err); /* and still drain: no SIGPIPE for the container */
		w.discard = 1;
	} else if (writer_init(&w, &cfg, err) != 0) {
		fprintf(stderr, "podhost-log-driver: cannot open log file, discarding output: %s\n", err);
		w.discard = 1;
	}
	if (close(FD_READY) != 0 && errno != EINTR) {
		fprintf(stderr, "logdriver: signal ready: close fd %d: %s\n", FD_READY, strerror(errno));
		return 1;
	}
	rc = pump(streams, &w, &mask);
	if (rc == 0 && bad_args)
		rc = EXIT_BAD_ARGS;
	return rc;
}
