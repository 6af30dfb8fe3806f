#ifndef CV4L2SHIM_H
#define CV4L2SHIM_H
#include <stddef.h>

/* V4L2 for Swift: ioctl request codes are macros Swift cannot import, so every call on a device
   lives here. Every function opens the device non-blocking, bounds every wait, closes what it
   opened on every path, and returns 0 or an errno value. */

/* Opens a V4L2 device without blocking and asks VIDIOC_QUERYCAP whether it captures video
   (single-planar capture with streaming I/O). Returns 0 when the device could be opened (and sets
   *is_capture and card[]), otherwise errno (ENOTTY: not a V4L2 device). */
int CV4L2Shim_query(const char *path, int *is_capture, char *card, int card_size);

/* One pixel format at one frame size a device offers (VIDIOC_ENUM_FMT × VIDIOC_ENUM_FRAMESIZES).
   A stepwise or continuous range (HDMI and TV inputs, many industrial cameras) is one entry:
   width × height its smallest size, max_width × max_height its largest, step_* its steps (1 for
   continuous); for a discrete size max_* equal width/height and step_* are 0. */
typedef struct {
    unsigned int fourcc;
    unsigned int width;
    unsigned int height;
    unsigned int max_width;
    unsigned int max_height;
    unsigned int step_width;
    unsigned int step_height;
    int compressed;
    char description[32];
} CV4L2Shim_size;

/* Lists up to max entries; *count is how many were written. Returns 0 or errno. Bounded: at most
   64 formats and 64 sizes each are asked for, whatever the driver claims. */
int CV4L2Shim_sizes(const char *path, CV4L2Shim_size *out, int max, int *count);

/* The frame a capture returns: the driver's format as set (it may adjust what was asked), how its
   Y'CbCr values are to be read (V4L2's colorspace, ycbcr_enc and quantization as the driver says),
   and how many frames were taken. */
typedef struct {
    unsigned int fourcc;
    unsigned int width;
    unsigned int height;
    unsigned int bytes_per_line;
    unsigned int size_image;
    unsigned int colorspace;
    unsigned int ycbcr_enc;
    unsigned int quantization;
    unsigned int frames_dequeued;
    unsigned int error_frames;
} CV4L2Shim_frame;

/* Opens path, sets fourcc at width×height, streams with up to four mmap buffers, dequeues
   warmup + 1 good frames (each waited for at most frame_timeout_ms with poll) and copies the last
   one (at most max_bytes) into *data (malloc'd; free with CV4L2Shim_free). A byte written to
   cancel_fd (or its closing) ends the wait at once with ECANCELED; -1 for none.
   Returns 0, or an errno: EBUSY another process streams; EACCES/EPERM permission; ENODEV/ENXIO
   unplugged; ETIMEDOUT no frame in time; EIO the driver flagged too many frames as broken;
   EPROTO the driver answered something impossible; EFBIG a frame past max_bytes; ENOTTY not a
   V4L2 capture device. stage names the step that failed. Buffers flagged V4L2_BUF_FLAG_ERROR are
   skipped, at most 8 of them. */
int CV4L2Shim_capture(const char *path, unsigned int fourcc, unsigned int width, unsigned int height, int warmup,
                      int frame_timeout_ms, size_t max_bytes, int cancel_fd, unsigned char **data, size_t *size,
                      CV4L2Shim_frame *frame, char *stage, int stage_size);

/* The same, keeping the last `keep` good frames (1…4; several frames of one stream let a reader
   of the page check that they agree): data[0…keep-1] and sizes[0…keep-1], oldest first, each
   malloc'd (free with CV4L2Shim_free). */
int CV4L2Shim_capture_frames(const char *path, unsigned int fourcc, unsigned int width, unsigned int height, int warmup,
                             int keep, int frame_timeout_ms, size_t max_bytes, int cancel_fd, unsigned char **data,
                             size_t *sizes, CV4L2Shim_frame *frame, char *stage, int stage_size);

void CV4L2Shim_free(unsigned char *data);

/* Watches /dev (and /dev/v4l/by-id when it exists) for video devices that appear, go or change
   owner or mode (inotify). Returns an inotify descriptor, or -1 with errno. */
int CV4L2Shim_watch_open(void);

/* Waits up to timeout_ms for a change to a video device node or link, or for cancel_fd to become
   readable. Returns 1 when a video device changed, 0 on timeout or an unrelated change, -1 when
   cancel_fd fired or the watch failed. */
int CV4L2Shim_watch_wait(int watch_fd, int cancel_fd, int timeout_ms);
#endif
