// The bytes of an ArrayBuffer as base64: how the pages that run graphs in a browser hand their
// outputs back (the device page, converter/devices/page/device.js, which the device server
// serves this file beside; the chromium runtime's runner, converter/runtimes/chromium_runner.js,
// which is copied next to it). One source, imported by both, so both encode alike.

export function base64(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = "";
  const CHUNK = 0x8000;  // String.fromCharCode takes its arguments on the stack
  for (let i = 0; i < bytes.length; i += CHUNK) {
    text += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(text);
}
