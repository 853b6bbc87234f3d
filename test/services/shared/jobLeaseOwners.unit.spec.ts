import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { goneOwnersOfThisHost, newLeaseOwner, processRuns } from '../../../services/shared/jobLeases';

describe('job lease owners gone from this host', () => {
  const host = os.hostname();

  it('names the owners of this host whose process no longer runs, and only those', () => {
    const running = new Set([101]);
    const owners = [
      `${host}:101:0a1b2c3d`, // runs
      `${host}:202:0a1b2c3d`, // gone
      `other-host:202:0a1b2c3d`, // another host's pid 202: not ours to judge
      `${host}:${process.pid}:0a1b2c3d`, // this very process (another runner of it): never gone
      'not a lease owner', `${host}:notapid:0a1b2c3d`,
    ];
    expect(goneOwnersOfThisHost(owners, (pid) => running.has(pid), host)).to.deep.equal([`${host}:202:0a1b2c3d`]);
  });

  it('reads a host name with colons in it (newLeaseOwner\'s form)', () => {
    expect(goneOwnersOfThisHost(['fe80::1:303:deadbeef'], () => false, 'fe80::1')).to.deep.equal(['fe80::1:303:deadbeef']);
    expect(goneOwnersOfThisHost([newLeaseOwner()], () => false)).to.deep.equal([], 'an owner of this process');
  });

  it('tells a process that runs from one that has ended', () => {
    expect(processRuns(process.pid)).to.equal(true);
    const ended = spawnSync(process.execPath, ['-e', '0']).pid!;
    expect(processRuns(ended)).to.equal(false);
    // pid 1 runs as another user or as us: it runs either way.
    expect(processRuns(1)).to.equal(true);
  });
});
