"""A thin ctypes binding to the espeak-ng library bundled by ``espeakng-loader``.

Only what talkhead needs: synchronous synthesis into memory with the engine's
own phoneme events (IPA names, sample positions).
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INIT_PHONEME_EVENTS = 0x0001
_INIT_PHONEME_IPA = 0x0002
_CHARS_UTF8 = 1
_EV_LIST_TERMINATED, _EV_END, _EV_MSG_TERMINATED, _EV_PHONEME = 0, 5, 6, 7
PARAM_RATE, PARAM_VOLUME, PARAM_PITCH, PARAM_RANGE = 1, 2, 3, 4


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class _Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


_Callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


class _Engine:
    """The process-wide espeak-ng binding; the C library keeps global state, hence the lock.

    espeak-ng also keeps synthesis state in C statics that nothing resets (the pitch
    flutter phase, gain control, cycle counters), so the same text would come out a few
    samples different depending on what was spoken before. Each utterance therefore
    runs in a freshly loaded library (load + initialise costs well under a millisecond
    once mapped), which makes synthesis a pure function of its inputs.
    """

    def __init__(self) -> None:
        import espeakng_loader

        self.lock = threading.Lock()
        self._path = espeakng_loader.get_library_path()
        self._data = espeakng_loader.get_data_path().encode()
        self._chunks: list[np.ndarray] = []
        self._events: list[tuple[int, int, str]] = []
        self._cb = _Callback(self._on_synth)  # keep a reference: ctypes does not
        self.lib = None
        with self.lock:
            self._load()
            self._unload()

    def _load(self) -> None:
        self.lib = ctypes.CDLL(self._path)
        self.sample_rate = self.lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, 0, self._data, _INIT_PHONEME_EVENTS | _INIT_PHONEME_IPA
        )
        if self.sample_rate <= 0:
            raise RuntimeError("espeak-ng failed to initialise")
        self.lib.espeak_SetSynthCallback(self._cb)
        if hasattr(self.lib, "espeak_ng_SetRandSeed"):  # breath noise: seeded from the clock otherwise
            self.lib.espeak_ng_SetRandSeed(ctypes.c_long(0))

    def _unload(self) -> None:
        import _ctypes

        self.lib.espeak_Terminate()
        _ctypes.dlclose(self.lib._handle)
        self.lib = None

    def _on_synth(self, wav, n, events) -> int:
        if n > 0:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        i = 0
        while events[i].type != _EV_LIST_TERMINATED:
            ev = events[i]
            if ev.type == _EV_PHONEME:
                name = bytes(ev.id.string).split(b"\0")[0].decode("utf-8", "replace")
                self._events.append((ev.type, ev.sample, name))
            elif ev.type in (_EV_END, _EV_MSG_TERMINATED):
                self._events.append((ev.type, ev.sample, ""))
            i += 1
        return 0

    def synth(self, text: str, voice: str, params: dict[int, int]) -> tuple[np.ndarray, list[tuple[int, int, str]]]:
        """Speak ``text``; returns int16 samples and (event type, sample, IPA phone) events."""
        with self.lock:
            self._load()
            try:
                if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
                    raise ValueError(f"espeak-ng has no voice {voice!r}")
                for key, value in params.items():
                    self.lib.espeak_SetParameter(key, int(value), 0)
                self._chunks, self._events = [], []
                buf = ctypes.create_string_buffer(text.encode("utf-8"))
                self.lib.espeak_Synth(buf, len(buf), 0, 0, 0, _CHARS_UTF8, None, None)
                self.lib.espeak_Synchronize()
            finally:
                self._unload()
            wav = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.int16)
            return wav, list(self._events)


_engine: _Engine | None = None
_engine_lock = threading.Lock()


def engine() -> _Engine:
    """The shared espeak-ng engine, initialised on first use."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = _Engine()
        return _engine
