//! What a block device already holds, from its first 68 KiB: a partition table or a filesystem,
//! swap, LVM or RAID signature. Such a device is refused for writing even with
//! `--storage-allow-write`. Offsets are the on-disk formats' (as blkid knows them).

/// Bytes to read from the start of the device.
pub const PROBE_BYTES: usize = 68 * 1024;

/// (what, offset, magic bytes).
const SIGNATURES: &[(&str, usize, &[u8])] = &[
    ("a GPT partition table", 512, b"EFI PART"),
    // LVM's label may sit in any of the first four sectors.
    ("an LVM physical volume", 24, b"LVM2 001"),
    ("an LVM physical volume", 512 + 24, b"LVM2 001"),
    ("an LVM physical volume", 1024 + 24, b"LVM2 001"),
    ("an LVM physical volume", 1536 + 24, b"LVM2 001"),
    ("an ext2/3/4 filesystem", 1024 + 56, &[0x53, 0xef]),
    ("an XFS filesystem", 0, b"XFSB"),
    ("a btrfs filesystem", 65536 + 64, b"_BHRfS_M"),
    ("swap space", 4096 - 10, b"SWAPSPACE2"),
    ("swap space", 4096 - 10, b"SWAP-SPACE"),
    // Swap made on a 64 KiB-page machine (aarch64) ends its first page further in.
    ("swap space", 65536 - 10, b"SWAPSPACE2"),
    ("an F2FS filesystem", 1024, &[0x10, 0x20, 0xf5, 0xf2]),
    ("a Ceph BlueStore device", 0, b"bluestore block device"),
    ("an NTFS filesystem", 3, b"NTFS    "),
    ("a FAT filesystem", 54, b"FAT1"),
    ("a FAT32 filesystem", 82, b"FAT32   "),
    ("Linux RAID (md 1.2)", 4096, &[0xfc, 0x4e, 0x2b, 0xa9]),
    ("an ISO 9660 image", 32768 + 1, b"CD001"),
    ("a LUKS container", 0, b"LUKS\xba\xbe"),
];

/// The first signature found in `head` (the device's first bytes), if any.
pub fn detect(head: &[u8]) -> Option<&'static str> {
    for (what, offset, magic) in SIGNATURES {
        if head.get(*offset..offset + magic.len()) == Some(magic) {
            return Some(what);
        }
    }
    // An MBR: the 0x55AA boot signature with at least one non-empty partition entry.
    if head.get(510..512) == Some(&[0x55, 0xaa]) {
        let entries = head.get(446..510)?;
        if entries.chunks(16).any(|e| e[4] != 0) {
            return Some("an MBR partition table");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_devices_have_no_signature() {
        assert_eq!(detect(&vec![0u8; PROBE_BYTES]), None);
        assert_eq!(detect(&[]), None);
    }

    #[test]
    fn common_signatures_are_found() {
        let mut ext4 = vec![0u8; PROBE_BYTES];
        ext4[1080] = 0x53;
        ext4[1081] = 0xef;
        assert_eq!(detect(&ext4), Some("an ext2/3/4 filesystem"));
        let mut gpt = vec![0u8; PROBE_BYTES];
        gpt[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(detect(&gpt), Some("a GPT partition table"));
        let mut mbr = vec![0u8; PROBE_BYTES];
        mbr[510] = 0x55;
        mbr[511] = 0xaa;
        assert_eq!(detect(&mbr), None, "a boot signature without partitions");
        mbr[446 + 4] = 0x83;
        assert_eq!(detect(&mbr), Some("an MBR partition table"));
        let mut xfs = vec![0u8; 4096];
        xfs[..4].copy_from_slice(b"XFSB");
        assert_eq!(detect(&xfs), Some("an XFS filesystem"));
        for sector in 0..4 {
            let mut lvm = vec![0u8; PROBE_BYTES];
            lvm[sector * 512 + 24..][..8].copy_from_slice(b"LVM2 001");
            assert_eq!(detect(&lvm), Some("an LVM physical volume"));
        }
        let mut swap64k = vec![0u8; PROBE_BYTES];
        swap64k[65526..65536].copy_from_slice(b"SWAPSPACE2");
        assert_eq!(detect(&swap64k), Some("swap space"));
    }
}
