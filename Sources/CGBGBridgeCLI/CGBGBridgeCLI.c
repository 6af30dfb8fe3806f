#include "CGBGBridgeCLI.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void CGBGBridgeCLI_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

/* The settings of Swift's crash backtracer that keep memory, registers and loaded images out of
   a crash report (which a service's log keeps): a report then holds the message and the frames
   only. Keys the user's SWIFT_BACKTRACE already sets are kept. */
static const char *const safe_settings[][2] = {
    {"interactive", "no"}, {"color", "no"}, {"registers", "none"}, {"images", "none"},
    {"sanitize", "yes"}, {"output-to", "stderr"},
};

static int mentions(const char *settings, const char *key) {
    size_t length = strlen(key);
    for (const char *p = settings; p && *p;) {
        while (*p == ',' || *p == ' ') p++;
        if (strncmp(p, key, length) == 0 && p[length] == '=') return 1;
        p = strchr(p, ',');
    }
    return 0;
}

size_t CGBGBridgeCLI_safe_backtrace_settings(const char *current, char *out, size_t size) {
    if (!out || size == 0) return 0;
    out[0] = 0;
    size_t used = 0;
    if (current && *current) used = (size_t)snprintf(out, size, "%s", current);
    /* A preset the user chose decides registers and images itself. */
    int preset = current && mentions(current, "preset");
    for (size_t i = 0; i < sizeof safe_settings / sizeof safe_settings[0]; i++) {
        const char *key = safe_settings[i][0];
        if (current && mentions(current, key)) continue;
        if (preset && (strcmp(key, "registers") == 0 || strcmp(key, "images") == 0)) continue;
        if (used >= size) break;
        used += (size_t)snprintf(out + used, size - used, "%s%s=%s", used ? "," : "", key, safe_settings[i][1]);
    }
    return used;
}

/* The Swift runtime reads SWIFT_BACKTRACE when it loads, before any code of ours runs: when the
   safe settings are missing, they are added and the program starts again in place (same pid,
   same arguments), once. Children (Chromium, helpers) inherit the variable. */
__attribute__((constructor)) static void gbgbridge_safe_backtrace(int argc, char **argv, char **envp) {
    (void)argc; (void)envp;
    if (getenv("GBGBRIDGE_BACKTRACE_DONE")) return;
    const char *current = getenv("SWIFT_BACKTRACE");
    char wanted[1024];
    size_t length = CGBGBridgeCLI_safe_backtrace_settings(current, wanted, sizeof wanted);
    if (length == 0 || length >= sizeof wanted) return;
    if (current && strcmp(current, wanted) == 0) return;
    if (setenv("SWIFT_BACKTRACE", wanted, 1) != 0) return;
    setenv("GBGBRIDGE_BACKTRACE_DONE", "1", 1);
    /* The program's own path, not /proc/self/exe: the process keeps its name (ps, pgrep, logs). */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || !argv || !argv[0]) return;
    self[n] = 0;
    execv(self, argv);
    /* If the program cannot be started again, it goes on with the runtime's settings. */
}
