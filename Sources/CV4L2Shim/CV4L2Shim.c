#include "CV4L2Shim.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int CV4L2Shim_query(const char *path, int *is_capture, char *card, int card_size) {
    *is_capture = 0;
    if (card_size > 0) card[0] = 0;
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errno;
    struct v4l2_capability capability;
    memset(&capability, 0, sizeof capability);
    if (ioctl(fd, VIDIOC_QUERYCAP, &capability) == 0) {
        unsigned int caps = (capability.capabilities & V4L2_CAP_DEVICE_CAPS) ? capability.device_caps : capability.capabilities;
        *is_capture = (caps & (V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_VIDEO_CAPTURE_MPLANE)) != 0;
        if (card_size > 0) {
            strncpy(card, (const char *)capability.card, (size_t)card_size - 1);
            card[card_size - 1] = 0;
        }
    }
    close(fd);
    return 0;
}
