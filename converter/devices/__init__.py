"""Real devices as runtimes: phones and laptops that open a served page run graphs there.

    webnn-convert serve                                   # prints the page's URL, then a QR code
    webnn-convert verify model.onnx --runtime device:phone

`server.py` serves the device page and takes work from the converter's commands; a device that
opens the page registers (`registry.py`: its browser, platform, and each deviceType's
opSupportLimits(), saved as target files) and stays connected to run jobs. `client.py` is the
side the commands use (`run_on_device`), `protocol.py` what both sides agree on (the token,
names, the upload's framing and limits), `record.py` where `serve` says which server it started
last (and, over https, its certificate's fingerprint, which the clients pin), `tls.py` the
certificate (self-signed and kept, or the user's). Only a module the server emits itself,
from a graph its own loader read, runs in the page.
"""
