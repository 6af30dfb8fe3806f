import GBGBridgeStubs
/// What the vivid VM runs (as root, in the guest's busybox shell): the command-line tool against
/// the kernel's test camera, vivid's error injection, then `gbgbridge serve` as a user without the
/// camera's group, driven from the host through the forwarded port and `cmd-N` files in /share.
enum VividScenario {
    /// The formats vivid offers that the host converts, each captured and compared with v4l2-ctl's frame.
    static let formats = ["YUYV", "UYVY", "YVYU", "VYUY", "422P", "YU12", "YV12", "NV12", "NV21", "NV16", "NV61", "NV24", "NV42",
                          "GREY", "RGBP", "RGB3", "BGR3", "BX24", "XR24", "BA24", "AR24", "XB24", "RX24", "AB24"]
    static let byID = "/dev/v4l/by-id/usb-GBGBridge_Test_Camera-video-index0"
    static let origin = "http://journey.test"

    /// The drawn data page (ICAO's TD3 specimen MRZ in OCR-B), letterboxed into a 1280×720 YUYV
    /// frame (BT.709, limited range, as vivid's HDMI output takes it) for the loop.
    static func loopFrame() -> [UInt8] {
        let page = StubDocumentCamera.drawPage()
        let width = 1280, height = 720
        let scale = min(Double(width - 40) / Double(page.width), Double(height - 40) / Double(page.height))
        let pageWidth = Int(Double(page.width) * scale), pageHeight = Int(Double(page.height) * scale)
        let left = (width - pageWidth) / 2, top = (height - pageHeight) / 2
        func rgb(_ x: Int, _ y: Int) -> (Double, Double, Double) {
            let px = x - left, py = y - top
            guard px >= 0, py >= 0, px < pageWidth, py < pageHeight else { return (70, 80, 90) }
            let sx = min(page.width - 1, Int(Double(px) / scale)), sy = min(page.height - 1, Int(Double(py) / scale))
            let i = (sy * page.width + sx) * 3
            return (Double(page.pixels[i]), Double(page.pixels[i + 1]), Double(page.pixels[i + 2]))
        }
        func clip(_ v: Double) -> UInt8 { UInt8(max(0, min(255, v.rounded()))) }
        var frame = [UInt8]()
        frame.reserveCapacity(width * height * 2)
        for y in 0..<height {
            for x in stride(from: 0, to: width, by: 2) {
                let a = rgb(x, y), b = rgb(x + 1, y)
                func luma(_ c: (Double, Double, Double)) -> Double { 16 + (0.2126 * c.0 + 0.7152 * c.1 + 0.0722 * c.2) * 219 / 255 }
                let r = (a.0 + b.0) / 2, g = (a.1 + b.1) / 2, bl = (a.2 + b.2) / 2
                let yAverage = 0.2126 * r + 0.7152 * g + 0.0722 * bl
                let cb = 128 + (bl - yAverage) / 1.8556 * 224 / 255, cr = 128 + (r - yAverage) / 1.5748 * 224 / 255
                frame += [clip(luma(a)), clip(cb), clip(luma(b)), clip(cr)]
            }
        }
        return frame
    }

    static var script: String {
        """
        #!/bin/sh
        G=/bin/gbgbridge
        S=/share
        BYID=\(byID)
        # Each step's output, error output and exit status go to /share for the host to check.
        step() { name=$1; shift; "$@" > $S/$name.out 2> $S/$name.err; echo $? > $S/$name.status; }
        bars() { v4l2-ctl -d /dev/video0 -c osd_text_mode=2 -c test_pattern=0; }
        reload() {
          rmmod vivid; insmod /lib/modules/vivid.ko
          i=0; while [ ! -e /dev/video0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
        }
        as_kiosk() { su -s /bin/sh kiosk -c "$*"; }
        mkdir -p /dev/v4l/by-id && ln -sf ../../video0 $BYID
        bars
        step list $G camera list --json
        for f in \(formats.joined(separator: " ")); do
          step cap-$f $G camera capture --device /dev/video0 --format $f --width 640 --height 360 --warmup 1 --out $S/cap-$f.png
          v4l2-ctl -d /dev/video0 --set-fmt-video=width=640,height=360,pixelformat=$f --stream-mmap --stream-count=1 --stream-skip=1 --stream-to=$S/ref-$f.raw > /dev/null 2>&1
        done
        step byid $G camera capture --device $BYID --width 640 --height 360 --out $S/byid.jpg
        # Busy: another process streams.
        v4l2-ctl -d /dev/video0 --stream-mmap --stream-count=100000 --stream-to=/dev/null > /dev/null 2>&1 & streamer=$!
        sleep 1
        step busy $G camera capture --device /dev/video0 --width 640 --height 360 --out $S/busy.png
        kill $streamer; wait $streamer
        # Denied: a user without the camera's group (the node is root's, 0600).
        step denied as_kiosk $G camera capture --device /dev/video0 --width 640 --height 360 --out /tmp/denied.png
        step denied-list as_kiosk $G camera list --json
        # A frame the driver flags as broken is skipped.
        v4l2-ctl -d /dev/video0 -c inject_v4l2_buf_flag_error=1
        step bufflag $G camera capture --device /dev/video0 --width 640 --height 360 --warmup 1 --out $S/bufflag.png
        # Errors the driver injects into the next call of each kind.
        for e in inject_vidioc_reqbufs_error inject_vidioc_qbuf_error inject_vidioc_streamon_error; do
          v4l2-ctl -d /dev/video0 -c $e=1
          step $e $G camera capture --device /dev/video0 --width 640 --height 360 --warmup 1 --out $S/$e.png
        done
        # A fatal streaming error, and the camera pulled away, in the middle of a capture.
        $G camera capture --device /dev/video0 --width 640 --height 360 --warmup 120 --frame-timeout 5 --out $S/fatal.png > $S/fatal.out 2> $S/fatal.err & c=$!
        # Injected again every half second until the capture ends: vivid ignores it until streaming has
        # started, and one injection 2 s in missed a whole capture on a loaded host (status 0).
        sleep 1; while kill -0 $c 2>/dev/null; do v4l2-ctl -d /dev/video0 -c inject_fatal_streaming_error=1; sleep 0.5; done
        wait $c; echo $? > $S/fatal.status
        $G camera capture --device /dev/video0 --width 640 --height 360 --warmup 120 --frame-timeout 5 --out $S/gone.png > $S/gone.out 2> $S/gone.err & c=$!
        sleep 2; v4l2-ctl -d /dev/video0 -c disconnect=1; wait $c; echo $? > $S/gone.status
        reload; bars; chmod 0600 /dev/video0
        # serve, as the kiosk user, behind a relay from the forwarded port to its loopback port.
        as_kiosk $G serve --port 8450 --operator-listen 127.0.0.1:8452 --allow-origin \(origin) --diagnostics --document-camera $BYID --document-resolution 1280x720 \\
          --selfie-camera auto --selfie-resolution 640x360 > $S/serve.log 2>&1 & serve=$!
        nc -ll -p 8451 -e nc 127.0.0.1 8450 & relay=$!
        i=0; until wget -q -O /dev/null http://127.0.0.1:8450/gbg-bridge.js 2>/dev/null || [ $i -gt 600 ]; do sleep 0.1; i=$((i+1)); done
        touch $S/serve-ready
        n=1
        while [ $n -le 50 ]; do
          i=0; while [ ! -f $S/cmd-$n ] && [ $i -lt 1800 ]; do sleep 0.1; i=$((i+1)); done
          [ -f $S/cmd-$n ] || break
          case "$(cat $S/cmd-$n)" in
            grant) chmod 0666 /dev/video0 ;;
            stream-start) v4l2-ctl -d /dev/video0 --stream-mmap --stream-count=100000 --stream-to=/dev/null > /dev/null 2>&1 & streamer=$!; sleep 1 ;;
            stream-stop) kill $streamer; wait $streamer ;;
            slow) v4l2-ctl -d /dev/video0 -p 1 ;;
            fast) v4l2-ctl -d /dev/video0 -p 30 ;;
            operator-get*) rm -f $S/operator.out; wget -q -O $S/operator.out "http://127.0.0.1:8452$(cut -d' ' -f2 $S/cmd-$n)" ;;
            disconnect-later) (sleep 2; v4l2-ctl -d /dev/video0 -c disconnect=1) & ;;
            loop-start)
              # vivid's loop: what is written to its HDMI output (video1) is what its HDMI input
              # (input 3 of video0) shows — a rendered data page in front of the camera.
              v4l2-ctl -d /dev/video0 -i 3 && v4l2-ctl -d /dev/video1 -o 1 && v4l2-ctl -d /dev/video0 -c osd_text_mode=2 -c loop_video=1
              v4l2-ctl -d /dev/video1 --set-fmt-video-out=width=1280,height=720,pixelformat=YUYV
              v4l2-ctl -d /dev/video1 --stream-out-mmap --stream-from=$S/page.yuyv --stream-loop --stream-count=1000000 > /dev/null 2>&1 & looper=$!
              sleep 1 ;;
            read-mrz) $G read --mrz-from-camera --camera /dev/video0 --mrz-timeout 60 --timeout 2 > $S/read-mrz.out 2> $S/read-mrz.err; echo $? > $S/read-mrz.status ;;
            loop-stop) kill $looper; wait $looper; v4l2-ctl -d /dev/video0 -c loop_video=0 -i 0 ;;
            unload) rmmod vivid ;;
            load) insmod /lib/modules/vivid.ko; i=0; while [ ! -e /dev/video0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; bars; chmod 0666 /dev/video0 ;;
            finish) touch $S/done-$n; break ;;
          esac
          touch $S/done-$n
          n=$((n+1))
        done
        kill $serve $relay 2>/dev/null
        wait $serve
        exit 0
        """
    }
}
