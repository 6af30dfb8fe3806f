#include "CV4L2Shim.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ioctl, retried on EINTR (a signal during a call is not a failure of the device). */
static int xioctl(int fd, unsigned long request, void *argument) {
    int result;
    do {
        result = ioctl(fd, request, argument);
    } while (result == -1 && errno == EINTR);
    return result;
}

static void set_stage(char *stage, int stage_size, const char *text) {
    if (stage && stage_size > 0) snprintf(stage, (size_t)stage_size, "%s", text);
}

int CV4L2Shim_query(const char *path, int *is_capture, char *card, int card_size) {
    *is_capture = 0;
    if (card_size > 0) card[0] = 0;
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errno;
    struct v4l2_capability capability;
    memset(&capability, 0, sizeof capability);
    if (xioctl(fd, VIDIOC_QUERYCAP, &capability) == 0) {
        unsigned int caps = (capability.capabilities & V4L2_CAP_DEVICE_CAPS) ? capability.device_caps : capability.capabilities;
        *is_capture = (caps & V4L2_CAP_VIDEO_CAPTURE) != 0 && (caps & V4L2_CAP_STREAMING) != 0;
        if (card_size > 0) {
            strncpy(card, (const char *)capability.card, (size_t)card_size - 1);
            card[card_size - 1] = 0;
        }
    }
    close(fd);
    return 0;
}

int CV4L2Shim_sizes(const char *path, CV4L2Shim_size *out, int max, int *count) {
    *count = 0;
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errno;
    for (unsigned int format_index = 0; format_index < 64 && *count < max; format_index++) {
        struct v4l2_fmtdesc description;
        memset(&description, 0, sizeof description);
        description.index = format_index;
        description.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        if (xioctl(fd, VIDIOC_ENUM_FMT, &description) != 0) break;
        for (unsigned int size_index = 0; size_index < 64 && *count < max; size_index++) {
            struct v4l2_frmsizeenum size;
            memset(&size, 0, sizeof size);
            size.index = size_index;
            size.pixel_format = description.pixelformat;
            if (xioctl(fd, VIDIOC_ENUM_FRAMESIZES, &size) != 0) break;
            CV4L2Shim_size *entry = &out[*count];
            memset(entry, 0, sizeof *entry);
            entry->fourcc = description.pixelformat;
            if (size.type == V4L2_FRMSIZE_TYPE_DISCRETE) {
                entry->width = entry->max_width = size.discrete.width;
                entry->height = entry->max_height = size.discrete.height;
            } else {
                entry->width = size.stepwise.min_width;
                entry->height = size.stepwise.min_height;
                entry->max_width = size.stepwise.max_width;
                entry->max_height = size.stepwise.max_height;
                int continuous = size.type == V4L2_FRMSIZE_TYPE_CONTINUOUS;
                entry->step_width = continuous || size.stepwise.step_width == 0 ? 1 : size.stepwise.step_width;
                entry->step_height = continuous || size.stepwise.step_height == 0 ? 1 : size.stepwise.step_height;
            }
            entry->compressed = (description.flags & V4L2_FMT_FLAG_COMPRESSED) != 0;
            strncpy(entry->description, (const char *)description.description, sizeof entry->description - 1);
            entry->description[sizeof entry->description - 1] = 0;
            (*count)++;
            if (size.type != V4L2_FRMSIZE_TYPE_DISCRETE) break;
        }
    }
    close(fd);
    return 0;
}

enum { BUFFER_COUNT = 4, MAX_ERROR_BUFFERS = 8 };

struct mapping {
    void *start;
    size_t length;
};

int CV4L2Shim_capture(const char *path, unsigned int fourcc, unsigned int width, unsigned int height, int warmup,
                      int frame_timeout_ms, size_t max_bytes, int cancel_fd, unsigned char **data, size_t *size,
                      CV4L2Shim_frame *frame, char *stage, int stage_size) {
    return CV4L2Shim_capture_frames(path, fourcc, width, height, warmup, 1, frame_timeout_ms, max_bytes, cancel_fd, data, size,
                                    frame, stage, stage_size);
}

int CV4L2Shim_capture_frames(const char *path, unsigned int fourcc, unsigned int width, unsigned int height, int warmup,
                             int keep, int frame_timeout_ms, size_t max_bytes, int cancel_fd, unsigned char **data,
                             size_t *sizes, CV4L2Shim_frame *frame, char *stage, int stage_size) {
    if (keep < 1) keep = 1;
    if (keep > 4) keep = 4;
    for (int k = 0; k < keep; k++) { data[k] = NULL; sizes[k] = 0; }
    memset(frame, 0, sizeof *frame);
    set_stage(stage, stage_size, "open");
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errno;

    struct mapping maps[BUFFER_COUNT];
    memset(maps, 0, sizeof maps);
    unsigned int mapped = 0;
    int streaming = 0;
    int result = 0;

    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISCHR(info.st_mode)) {
        set_stage(stage, stage_size, "open (not a character device)");
        result = ENOTTY;
        goto done;
    }
    struct v4l2_capability capability;
    memset(&capability, 0, sizeof capability);
    set_stage(stage, stage_size, "VIDIOC_QUERYCAP");
    if (xioctl(fd, VIDIOC_QUERYCAP, &capability) != 0) { result = errno; goto done; }
    unsigned int caps = (capability.capabilities & V4L2_CAP_DEVICE_CAPS) ? capability.device_caps : capability.capabilities;
    if (!(caps & V4L2_CAP_VIDEO_CAPTURE) || !(caps & V4L2_CAP_STREAMING)) {
        set_stage(stage, stage_size, "VIDIOC_QUERYCAP (no video capture with streaming)");
        result = ENOTTY;
        goto done;
    }

    struct v4l2_format format;
    memset(&format, 0, sizeof format);
    format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    format.fmt.pix.pixelformat = fourcc;
    format.fmt.pix.width = width;
    format.fmt.pix.height = height;
    format.fmt.pix.field = V4L2_FIELD_NONE;
    set_stage(stage, stage_size, "VIDIOC_S_FMT");
    if (xioctl(fd, VIDIOC_S_FMT, &format) != 0) { result = errno; goto done; }
    frame->fourcc = format.fmt.pix.pixelformat;
    frame->width = format.fmt.pix.width;
    frame->height = format.fmt.pix.height;
    frame->bytes_per_line = format.fmt.pix.bytesperline;
    frame->size_image = format.fmt.pix.sizeimage;
    frame->colorspace = format.fmt.pix.colorspace;
    frame->ycbcr_enc = format.fmt.pix.ycbcr_enc;
    frame->quantization = format.fmt.pix.quantization;
    if (frame->width == 0 || frame->height == 0 || frame->width > 16384 || frame->height > 16384) {
        set_stage(stage, stage_size, "VIDIOC_S_FMT (impossible frame size)");
        result = EPROTO;
        goto done;
    }

    struct v4l2_requestbuffers request;
    memset(&request, 0, sizeof request);
    request.count = BUFFER_COUNT;
    request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    request.memory = V4L2_MEMORY_MMAP;
    set_stage(stage, stage_size, "VIDIOC_REQBUFS");
    if (xioctl(fd, VIDIOC_REQBUFS, &request) != 0) { result = errno; goto done; }
    if (request.count < 2 || request.count > BUFFER_COUNT) {
        set_stage(stage, stage_size, "VIDIOC_REQBUFS (buffer count)");
        result = request.count < 2 ? ENOMEM : EPROTO;
        goto done;
    }
    for (unsigned int i = 0; i < request.count; i++) {
        struct v4l2_buffer buffer;
        memset(&buffer, 0, sizeof buffer);
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        buffer.memory = V4L2_MEMORY_MMAP;
        buffer.index = i;
        set_stage(stage, stage_size, "VIDIOC_QUERYBUF");
        if (xioctl(fd, VIDIOC_QUERYBUF, &buffer) != 0) { result = errno; goto done; }
        if (buffer.length == 0 || buffer.length > (256u << 20)) {
            set_stage(stage, stage_size, "VIDIOC_QUERYBUF (buffer size)");
            result = EPROTO;
            goto done;
        }
        set_stage(stage, stage_size, "mmap");
        void *start = mmap(NULL, buffer.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, buffer.m.offset);
        if (start == MAP_FAILED) { result = errno; goto done; }
        maps[i].start = start;
        maps[i].length = buffer.length;
        mapped = i + 1;
        set_stage(stage, stage_size, "VIDIOC_QBUF");
        if (xioctl(fd, VIDIOC_QBUF, &buffer) != 0) { result = errno; goto done; }
    }
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    set_stage(stage, stage_size, "VIDIOC_STREAMON");
    if (xioctl(fd, VIDIOC_STREAMON, &type) != 0) { result = errno; goto done; }
    streaming = 1;

    int wanted = (warmup < 0 ? 0 : warmup) + keep;
    while ((int)frame->frames_dequeued < wanted) {
        struct pollfd watch[2] = {{.fd = fd, .events = POLLIN}, {.fd = cancel_fd, .events = POLLIN}};
        set_stage(stage, stage_size, "waiting for a frame");
        int ready = poll(watch, cancel_fd >= 0 ? 2 : 1, frame_timeout_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) { result = errno; goto done; }
        if (ready == 0) { result = ETIMEDOUT; goto done; }
        if (cancel_fd >= 0 && watch[1].revents) { result = ECANCELED; goto done; }
        if ((watch[0].revents & (POLLERR | POLLHUP | POLLNVAL)) && !(watch[0].revents & POLLIN)) {
            /* A device that went away reports POLLERR; DQBUF then says ENODEV. */
            struct v4l2_buffer probe;
            memset(&probe, 0, sizeof probe);
            probe.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
            probe.memory = V4L2_MEMORY_MMAP;
            set_stage(stage, stage_size, "VIDIOC_DQBUF");
            result = xioctl(fd, VIDIOC_DQBUF, &probe) != 0 ? errno : EIO;
            if (result == EAGAIN) result = EIO;
            goto done;
        }
        struct v4l2_buffer buffer;
        memset(&buffer, 0, sizeof buffer);
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        buffer.memory = V4L2_MEMORY_MMAP;
        set_stage(stage, stage_size, "VIDIOC_DQBUF");
        if (xioctl(fd, VIDIOC_DQBUF, &buffer) != 0) {
            if (errno == EAGAIN) continue;
            result = errno;
            goto done;
        }
        if (buffer.index >= mapped) {
            set_stage(stage, stage_size, "VIDIOC_DQBUF (buffer index)");
            result = EPROTO;
            goto done;
        }
        int last = 0;
        if (buffer.flags & V4L2_BUF_FLAG_ERROR) {
            /* A frame the driver says is corrupt: skipped, within a bound. */
            if (++frame->error_frames > MAX_ERROR_BUFFERS) {
                set_stage(stage, stage_size, "frames flagged as errors by the driver");
                result = EIO;
                goto done;
            }
        } else {
            frame->frames_dequeued++;
            last = (int)frame->frames_dequeued == wanted;
        }
        /* The last `keep` good frames are copied out, oldest first. */
        int slot = (int)frame->frames_dequeued - (wanted - keep) - 1;
        if (!(buffer.flags & V4L2_BUF_FLAG_ERROR) && slot >= 0) {
            size_t used = buffer.bytesused;
            if (used == 0 || used > maps[buffer.index].length) {
                set_stage(stage, stage_size, "VIDIOC_DQBUF (frame size)");
                result = EPROTO;
                goto done;
            }
            if (used > max_bytes) {
                set_stage(stage, stage_size, "frame larger than allowed");
                result = EFBIG;
                goto done;
            }
            unsigned char *copy = malloc(used);
            if (!copy) { result = ENOMEM; goto done; }
            memcpy(copy, maps[buffer.index].start, used);
            data[slot] = copy;
            sizes[slot] = used;
        }
        if (last) break;
        set_stage(stage, stage_size, "VIDIOC_QBUF");
        if (xioctl(fd, VIDIOC_QBUF, &buffer) != 0) { result = errno; goto done; }
    }
    set_stage(stage, stage_size, "done");

done:
    if (streaming) {
        enum v4l2_buf_type off = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        xioctl(fd, VIDIOC_STREAMOFF, &off);
    }
    for (unsigned int i = 0; i < mapped; i++) munmap(maps[i].start, maps[i].length);
    if (mapped > 0) {
        /* Free the driver's buffers so the next process can stream at once. */
        struct v4l2_requestbuffers release;
        memset(&release, 0, sizeof release);
        release.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        release.memory = V4L2_MEMORY_MMAP;
        xioctl(fd, VIDIOC_REQBUFS, &release);
    }
    close(fd);
    if (result != 0) {
        for (int k = 0; k < keep; k++) {
            free(data[k]);
            data[k] = NULL;
            sizes[k] = 0;
        }
    }
    return result;
}

void CV4L2Shim_free(unsigned char *data) { free(data); }

int CV4L2Shim_watch_open(void) {
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) return -1;
    const unsigned int mask = IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM;
    if (inotify_add_watch(fd, "/dev", mask) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    /* by-id appears with the first camera udev names; a missing one is not an error. */
    inotify_add_watch(fd, "/dev/v4l/by-id", mask);
    return fd;
}

int CV4L2Shim_watch_wait(int watch_fd, int cancel_fd, int timeout_ms) {
    struct pollfd watch[2] = {{.fd = watch_fd, .events = POLLIN}, {.fd = cancel_fd, .events = POLLIN}};
    int ready = poll(watch, cancel_fd >= 0 ? 2 : 1, timeout_ms);
    if (ready < 0) return errno == EINTR ? 0 : -1;
    if (ready == 0) return 0;
    if (cancel_fd >= 0 && watch[1].revents) return -1;
    if (watch[0].revents & (POLLERR | POLLNVAL)) return -1;
    /* Drain what is there; report whether any of it names a video device or a by-id link. */
    char buffer[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int relevant = 0;
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t got = read(watch_fd, buffer, sizeof buffer);
        if (got <= 0) break;
        for (char *at = buffer; at < buffer + got;) {
            struct inotify_event *event = (struct inotify_event *)at;
            if (event->len == 0 || strncmp(event->name, "video", 5) == 0 || strncmp(event->name, "v4l", 3) == 0 ||
                strncmp(event->name, "usb-", 4) == 0 || strncmp(event->name, "pci-", 4) == 0 || strncmp(event->name, "platform-", 9) == 0)
                relevant = 1;
            at += sizeof(struct inotify_event) + event->len;
        }
    }
    return relevant;
}
