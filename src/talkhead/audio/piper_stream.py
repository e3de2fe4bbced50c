"""A Piper (VITS) voice run in three parts, so that a sentence's speech comes out a fraction of a second at a time.

VITS makes a sentence in three stages: the text stage (text encoder and duration predictor: phoneme ids
-> the prior ``z_p`` over the sentence's spectrogram frames, and how many frames each id lasts), the
flow (``z_p`` -> ``z``) and the HiFi-GAN decoder (``z`` -> audio, ``hop`` samples per frame). The flow
and the decoder are convolutions over time with a finite reach (``FLOW_REACH``, ``DEC_REACH``), so both
run piece by piece with that much context on either side: a sentence's first 0.42 s is out after the text
stage and one short piece of the other two (on two busy cores 106 ms of the 189 ms a 1.3 s sentence takes
whole, 156 ms of 550 ms for a 3.3 s one), and the pieces join into what the whole-sentence run gives, to
float rounding: no seam.

The three parts are cut from the voice's own ONNX graph at load (``onnx.utils.Extractor``), at the
tensors the VITS export always has: the decoder's input, the mask it is multiplied by, the prior
(the sum after the graph's second ``RandomNormalLike``) and the durations (its one ``Ceil``).

Piper peak-normalises each sentence, which needs the whole sentence first; a streamed sentence gets a
fixed gain instead (``PiperSettings.gain``) and a soft limit near full scale. On 18 sentences the raw
peak varied 0.33-0.78 and the RMS 0.045-0.072, so a fixed gain also keeps the loudness steadier.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Frames of context each part needs on either side: the flow's reach from its kernels (4 couplings of 4
# kernel-5 convs); the decoder's measured (its output is the whole run's to 1e-6 from 12 on).
FLOW_REACH = 32
DEC_REACH = 12


class Prior(NamedTuple):
    """A sentence after the text stage: what the flow and the decoder need, and the ids' durations."""

    z_p: np.ndarray  # [1, C, T] float32, T spectrogram frames
    mask: np.ndarray  # [1, 1, T]
    frames: np.ndarray  # [n_ids] int64: frames each phoneme id lasts (they sum to T)

    @property
    def length(self) -> int:
        return self.z_p.shape[2]


def _producer(graph, tensor: str):
    return next(n for n in graph.node if tensor in n.output)


def cut_points(model) -> dict[str, str]:
    """The tensor names where a VITS graph is cut: prior, mask, durations, decoder input."""
    g = model.graph
    consts = {i.name for i in g.initializer}
    dec_nodes = [n for n in g.node if n.name.startswith("/dec/")]
    inside = {o for n in dec_nodes for o in n.output}
    dec_in = {i for n in dec_nodes for i in n.input if i and i not in inside and i not in consts}
    dec_in = [i for i in dec_in if not _producer(g, i).op_type.startswith("Constant")] if dec_in else []
    ceils = [n.output[0] for n in g.node if n.op_type == "Ceil"]
    noise = [n.output[0] for n in g.node if n.op_type == "RandomNormalLike" and not n.name.startswith("/dp/")]
    if len(dec_in) != 1 or len(ceils) != 1 or len(noise) != 1:
        raise RuntimeError("this Piper model is not the VITS graph talkhead knows how to stream")
    masked = _producer(g, dec_in[0])  # z * y_mask
    prior, t = None, noise[0]
    for _ in range(4):  # z_p = m_p + noise * exp(logs_p) * noise_scale: the Add a few nodes after the noise
        node = next(n for n in g.node if t in n.input)
        if node.op_type == "Add":
            prior = node.output[0]
            break
        t = node.output[0]
    if masked.op_type != "Mul" or prior is None:
        raise RuntimeError("this Piper model is not the VITS graph talkhead knows how to stream")
    return {"prior": prior, "mask": masked.input[1], "durations": ceils[0], "z": dec_in[0]}


class PiperEngine:
    """A Piper ONNX model as its three parts; ``prior`` a sentence, then ``audio`` any span of its frames."""

    def __init__(self, model_path: str, hop: int) -> None:
        import onnx
        import onnx.utils
        import onnxruntime as ort

        model = onnx.load(str(model_path))
        cut = cut_points(model)
        ex = onnx.utils.Extractor(model)
        parts = {"text": ex.extract_model(["input", "input_lengths", "scales"],
                                          [cut["prior"], cut["mask"], cut["durations"]]),
                 "flow": ex.extract_model([cut["prior"], cut["mask"]], [cut["z"]]),
                 "dec": ex.extract_model([cut["z"]], [model.graph.output[0].name])}
        opts = ort.SessionOptions()
        # One thread, the caller's: a live say's later pieces are made in a thread of lowered priority
        # (``serve.session``), which onnxruntime's own pool threads would not share; on two busy cores
        # a first piece took 78 ms on one thread and 80 ms on two. Threads that wait by spinning hold a
        # core the live face is drawing on: the whole model took 300 ms with spinning and 190 ms without.
        opts.intra_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sessions = {k: ort.InferenceSession(p.SerializeToString(), opts, providers=["CPUExecutionProvider"])
                         for k, p in parts.items()}
        self.names, self.hop = cut, hop

    def prior(self, ids: list[int], scales: np.ndarray) -> Prior:
        """Phoneme ids and (noise, length, noise_w) scales -> the sentence's prior and durations."""
        x = np.asarray(ids, np.int64)[None]
        z_p, mask, frames = self.sessions["text"].run(
            None, {"input": x, "input_lengths": np.array([x.shape[1]], np.int64), "scales": scales})
        return Prior(z_p, mask, np.asarray(frames, np.float32).reshape(-1).astype(np.int64))

    def audio(self, prior: Prior, lo: int, hi: int) -> np.ndarray:
        """The sentence's audio of frames [lo, hi): ``(hi - lo) * hop`` samples, as the whole run has them."""
        n = prior.length
        d0, d1 = max(0, lo - DEC_REACH), min(n, hi + DEC_REACH)  # the z the decoder needs
        f0, f1 = max(0, d0 - FLOW_REACH), min(n, d1 + FLOW_REACH)  # the z_p the flow needs for it
        z = self.sessions["flow"].run(None, {self.names["prior"]: np.ascontiguousarray(prior.z_p[:, :, f0:f1]),
                                             self.names["mask"]: np.ascontiguousarray(prior.mask[:, :, f0:f1])})[0]
        z = np.ascontiguousarray(z[:, :, d0 - f0:d1 - f0])
        wav = self.sessions["dec"].run(None, {self.names["z"]: z})[0].reshape(-1)
        return wav[(lo - d0) * self.hop:(hi - d0) * self.hop]



def spans(length: int, first: int = 16, most: int = 128, grow: float = 2.0) -> list[tuple[int, int]]:
    """A sentence's frames [0, length) in pieces: ``first`` frames, then ``grow`` times as many each time, at most
    ``most``. A remainder under ``first / 2`` joins the piece before it (each piece recomputes its context),
    except the first, which stays short: a live face waits for it."""
    out, lo, size = [], 0, float(first)
    while lo < length:
        hi = min(length, lo + round(size))
        if lo and length - hi < first / 2:
            hi = length
        out.append((lo, hi))
        lo, size = hi, min(float(most), size * grow)
    return out


def soft_limit(wav: np.ndarray, knee: float = 0.8) -> np.ndarray:
    """Unchanged below ``knee``, bent smoothly towards full scale above it (no hard clipping)."""
    a = np.abs(wav)
    over = a > knee
    if not over.any():
        return wav
    out = wav.copy()
    room = 1.0 - knee
    out[over] = np.sign(wav[over]) * (knee + room * np.tanh((a[over] - knee) / room))
    return out
