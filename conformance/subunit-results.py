#!/usr/bin/python3
"""Reads a subunit v2 stream (stestr's record of a Tempest run) on stdin and writes one JSON object per test on
stdout: {"id", "status", "reason"}. `reason` is Tempest's skip reason for skips and the last line of the traceback
for failures. Python because the subunit and testtools libraries that read the stream are Python (Debian's
python3-subunit, installed with tempest)."""
import json
import re
import sys

import subunit
import testtools


def text_of(details, name):
    content = details.get(name)
    if content is None:
        return ''
    return ''.join(chunk.decode('utf-8', 'replace') if isinstance(chunk, bytes) else chunk for chunk in content.iter_bytes())


EXCEPTION_LINE = re.compile(r'^[A-Za-z_][\w.]*(Error|Exception|Failure|Body|Mismatch\w*|NotFound|Conflict|BadRequest|Forbidden|Timeout\w*)?: ')


def exception_of(traceback):
    """The exception line of a traceback and the one after it (Tempest puts the details there), shortened."""
    lines = traceback.strip().splitlines()
    starts = [n for n, line in enumerate(lines) if EXCEPTION_LINE.match(line)]
    if not starts:
        return lines[-1] if lines else ''
    text = ' '.join(line.strip() for line in lines[starts[-1]:starts[-1] + 2])
    return text if len(text) <= 600 else text[:600] + '…'


def on_test(test):
    status = test['status']
    if status == 'skip':
        reason = text_of(test['details'], 'reason')
    elif status in ('fail', 'uxsuccess'):
        reason = exception_of(text_of(test['details'], 'traceback'))
    else:
        reason = ''
    sys.stdout.write(json.dumps({'id': test['id'], 'status': status, 'reason': reason.strip()}) + '\n')


result = testtools.StreamToDict(on_test)
result.startTestRun()
try:
    subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name='stdout').run(result)
finally:
    result.stopTestRun()
