#!/usr/bin/env bash
# Build a small static ffmpeg for baseline (a) of `glrec bench` on a machine without one
# (the lent GPU machine has no network, and imageio-ffmpeg's bundled binary, 172 MB, does not
# fit in what travels there). Run from the project root on the development machine:
#
#   bash benchmarks/gpu/build_ffmpeg.sh          # about 5-10 minutes on 2 cores
#
# It writes .gpu/ffmpeg (static, about 5 MB: raw video in through a pipe, libx264, MP4 out, and
# the scale filter for rgb24 -> yuv420p: what imageio-ffmpeg's write_frames runs) and
# .gpu/pylib/imageio_ffmpeg (the package without its binary). x264 and FFmpeg are built from Debian's
# current sources; the bench prints the x264 core and option string of every row it compares. On the GPU machine:
#
#   export IMAGEIO_FFMPEG_EXE=$PWD/.gpu/ffmpeg PYTHONPATH=$PWD/.gpu/pylib:$PYTHONPATH
#
# Sources come from Debian's archive (deb-src), through a private apt configuration: the
# machine's own apt setup is not changed.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
py=$(python3 -c 'import imageio_ffmpeg, os; print(os.path.dirname(imageio_ffmpeg.__file__))')
install_pylib() {
  rm -rf .gpu/pylib/imageio_ffmpeg && mkdir -p .gpu/pylib && cp -r "$py" .gpu/pylib/imageio_ffmpeg
  rm -rf .gpu/pylib/imageio_ffmpeg/binaries/ffmpeg-* .gpu/pylib/imageio_ffmpeg/__pycache__
}
# pack.sh starts .gpu/ afresh: a binary built before is kept here and copied again in seconds.
cache=${XDG_CACHE_HOME:-$HOME/.cache}/glrec/ffmpeg-static
if [ -x "$cache" ] && [ -z "${GLREC_FFMPEG_REBUILD:-}" ]; then
  mkdir -p .gpu && cp "$cache" .gpu/ffmpeg && install_pylib
  echo "ready: .gpu/ffmpeg from $cache ($(.gpu/ffmpeg -version | head -1)); GLREC_FFMPEG_REBUILD=1 builds it again"
  exit 0
fi
work=${GLREC_FFMPEG_BUILD:-$(mktemp -d)}
mkdir -p "$work/lists/partial" "$work/src" .gpu
cat > "$work/sources.list" <<LIST
deb-src http://deb.debian.org/debian trixie main
LIST
o=(-oDir::Etc::SourceList="$work/sources.list" -oDir::Etc::SourceParts=/dev/null -oDir::State::Lists="$work/lists"
   -oAPT::Sandbox::User=root)
apt-get "${o[@]}" update >/dev/null
command -v nasm >/dev/null || { apt-get install -y -qq nasm >/dev/null; }
cd "$work/src"
# Only the upstream tarballs are needed (Debian's patches are not); a missing .dsc is not fatal.
for pkg in x264 ffmpeg; do
  ls ${pkg}_*.orig.tar.* >/dev/null 2>&1 || apt-get "${o[@]}" source --download-only "$pkg" >/dev/null 2>&1 || true
  t=$(ls ${pkg}_*.orig.tar.* | head -1)
  tar -xf "$t"
done
prefix="$work/prefix"
x264dir=$(ls -d "$work"/src/x264-*/ | head -1)
log="$work/build.log"
trap 'echo "build_ffmpeg.sh failed; the end of $log:" >&2; tail -20 "$log" >&2' ERR
(cd "$x264dir" && ./configure --prefix="$prefix" --enable-static --disable-cli --enable-pic && make -j"$(nproc)" &&
  make install) >>"$log" 2>&1
ffdir=$(ls -d "$work"/src/ffmpeg-*/ | head -1)
(cd "$ffdir" && PKG_CONFIG_PATH="$prefix/lib/pkgconfig" ./configure --prefix="$prefix" \
  --pkg-config-flags=--static --extra-ldflags="-static" --enable-static --disable-shared \
  --enable-gpl --enable-libx264 --disable-everything --disable-doc --disable-network --disable-autodetect \
  --disable-ffplay --disable-ffprobe \
  --enable-protocol=file,pipe,fd --enable-demuxer=rawvideo --enable-decoder=rawvideo \
  --enable-encoder=libx264 --enable-muxer=mp4,null --enable-parser=h264 \
  --enable-filter=scale,format,null,buffer,buffersink,setpts,fps \
  --enable-swscale && make -j"$(nproc)" ffmpeg) >>"$log" 2>&1
cd "$root"
cp "$ffdir/ffmpeg" .gpu/ffmpeg
strip .gpu/ffmpeg
mkdir -p "$(dirname "$cache")" && cp .gpu/ffmpeg "$cache"
install_pylib
"$root/.gpu/ffmpeg" -hide_banner -encoders 2>/dev/null | grep -q libx264
du -sh "$root/.gpu/ffmpeg"
echo "ready: .gpu/ffmpeg ($("$root/.gpu/ffmpeg" -version | head -1))"
