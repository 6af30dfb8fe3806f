#ifndef CV4L2SHIM_H
#define CV4L2SHIM_H
/* Opens a V4L2 device without blocking and asks VIDIOC_QUERYCAP whether it captures video.
   Returns 0 when the device could be opened (and sets *is_capture and card[]), otherwise errno. */
int CV4L2Shim_query(const char *path, int *is_capture, char *card, int card_size);
#endif
