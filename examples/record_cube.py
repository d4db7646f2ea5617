"""Record the built-in cube for three seconds: python examples/record_cube.py [out.mp4]"""

import sys

import glrec

result = glrec.record("cube", sys.argv[1] if len(sys.argv) > 1 else "cube.mp4", size=(1280, 720), fps=30, seconds=3)
print(result.summary())
