package process

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os/signal"
	"syscall"
	"time"
)

// A container's output goes through a log shim, a small process of its
// own (as conmon is for CRI-O) that puts the time before each line. The
// container writes into a pipe the shim reads, and the shim holds the log
// file, so both outlive a restart of the agent; the shim ends when the
// container and whatever it started have closed their output.

// StampLayout is the time before each logged line: fixed width, UTC, to
// the nanosecond, then one space.
const StampLayout = "2006-01-02T15:04:05.000000000Z"

// maxLine bounds one logged line; a longer one is logged in parts.
const maxLine = 64 << 10

// RunLogShim copies in to out, each line with the time it was read. It
// ignores the signals a container's stop sends, so that it logs the
// container's last words, and returns at the end of in.
func RunLogShim(in io.Reader, out io.Writer) error {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	return stampLines(in, out, time.Now)
}

func stampLines(in io.Reader, out io.Writer, now func() time.Time) error {
	r := bufio.NewReaderSize(in, maxLine)
	var line bytes.Buffer
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			line.Reset()
			line.WriteString(now().UTC().Format(StampLayout))
			line.WriteByte(' ')
			line.Write(chunk)
			if chunk[len(chunk)-1] != '\n' {
				line.WriteByte('\n')
			}
			if _, werr := out.Write(line.Bytes()); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}
