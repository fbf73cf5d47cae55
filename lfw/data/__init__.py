"""The data: the LFW dataset over a real or synthetic tree (:mod:`lfw.data.dataset`), its file index as a Python
list or a numpy array (:mod:`lfw.data.index`), the transform presets (:mod:`lfw.data.transforms`), the offline
LFW-like tree (:mod:`lfw.data.synth`, made ahead of time by ``python -m lfw.data.cache``), where the images
come from (:mod:`lfw.data.root`) and the unreadable ones the skip option leaves out (:mod:`lfw.data.screen`)."""
